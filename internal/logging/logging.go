// Package logging sets up the trainer's zerolog logger: a human console
// on a terminal, JSON lines otherwise, and always JSON lines to the run's
// log file.
package logging

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// Field names attached by WithRun and WithIteration.
const (
	FieldRun       = "run"
	FieldIteration = "iteration"
)

// Formats of the output w of New.
const (
	FormatAuto    = "auto"    // console on a terminal, JSON otherwise
	FormatConsole = "console" // human-readable lines, coloured on a terminal
	FormatJSON    = "json"    // one JSON object per line
)

// New returns a logger at level (trace, debug, info, warn or error; ""
// is info) writing to w in format (auto, console or json; "" is auto)
// and, when file is not "", also appending JSON lines to file (its folder
// is created). Every event carries a timestamp. Close the returned closer
// when done to close the file.
func New(level, format string, w io.Writer, file string) (zerolog.Logger, io.Closer, error) {
	lvl, err := parseLevel(level)
	if err != nil {
		return zerolog.Nop(), nil, err
	}
	out, err := output(format, w)
	if err != nil {
		return zerolog.Nop(), nil, err
	}
	closer := io.Closer(nopCloser{})
	if file != "" {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return zerolog.Nop(), nil, fmt.Errorf("log file %s: %w", file, err)
		}
		f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return zerolog.Nop(), nil, fmt.Errorf("log file %s: %w", file, err)
		}
		out, closer = zerolog.MultiLevelWriter(out, f), f
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), closer, nil
}

// WithRun returns l with the run name attached to every event.
func WithRun(l zerolog.Logger, run string) zerolog.Logger {
	return l.With().Str(FieldRun, run).Logger()
}

// WithIteration returns l with the RL iteration attached to every event.
func WithIteration(l zerolog.Logger, iteration int) zerolog.Logger {
	return l.With().Int(FieldIteration, iteration).Logger()
}

func parseLevel(level string) (zerolog.Level, error) {
	switch level {
	case "":
		return zerolog.InfoLevel, nil
	case "trace", "debug", "info", "warn", "error":
		return zerolog.ParseLevel(level)
	}
	return zerolog.NoLevel, fmt.Errorf("log level %q: want trace, debug, info, warn or error", level)
}

// output wraps w for format: a console writer, coloured only on a
// terminal, or w itself for JSON.
func output(format string, w io.Writer) (io.Writer, error) {
	term := isTerminal(w)
	switch format {
	case FormatJSON:
		return w, nil
	case FormatConsole:
	case FormatAuto, "":
		if !term {
			return w, nil
		}
	default:
		return nil, fmt.Errorf("log format %q: want auto, console or json", format)
	}
	return zerolog.ConsoleWriter{Out: w, NoColor: !term, TimeFormat: time.TimeOnly}, nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
