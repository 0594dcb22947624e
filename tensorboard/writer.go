// Package tensorboard writes TensorBoard event files of scalars, so that
// `tensorboard --logdir runs/` shows a run's metrics while it trains. An
// event file is a sequence of TFRecords (record.go), each an Event
// protocol buffer (event.go), encoded here by hand: no protobuf
// dependency.
package tensorboard

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// fileVersion is the version string of the first event of every file.
const fileVersion = "brain.Event:2"

// Writer appends events to one event file. Every call writes straight to
// the file (no buffer), so TensorBoard sees an iteration as soon as it is
// logged. It is not safe for concurrent use.
type Writer struct {
	f    *os.File
	path string
}

// Create makes dir and starts a new event file in it, named as TensorBoard
// expects (events.out.tfevents.<seconds>.<host>), with the file-version
// event. Several files in one folder (a resumed run) are read together.
func Create(dir string) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	now := time.Now()
	path := filepath.Join(dir, "events.out.tfevents."+strconv.FormatInt(now.Unix(), 10)+"."+host)
	for n := 2; ; n++ { // two writers started in the same second get two files
		if _, err := os.Stat(path); os.IsNotExist(err) {
			break
		}
		path = filepath.Join(dir, fmt.Sprintf("events.out.tfevents.%d.%s.%d", now.Unix(), host, n))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	w := &Writer{f: f, path: path}
	if err := w.write(event(seconds(now), 0, fileVersion, nil)); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Path is the event file.
func (w *Writer) Path() string { return w.path }

// Scalars writes one event at step holding a scalar per metric, tagged
// with the metric's name, in name order. Values are stored as float32, as
// TensorBoard's simple_value is; NaN and infinities (a metric not
// computed) are left out.
func (w *Writer) Scalars(step int64, wall time.Time, metrics map[string]float64) error {
	names := make([]string, 0, len(metrics))
	for k, v := range metrics {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	ss := make([]scalar, len(names))
	for i, k := range names {
		ss[i] = scalar{tag: k, value: float32(metrics[k])}
	}
	return w.write(event(seconds(wall), step, "", ss))
}

// write appends one event as a record.
func (w *Writer) write(ev []byte) error {
	if _, err := w.f.Write(record(ev)); err != nil {
		return fmt.Errorf("tensorboard: write %s: %w", w.path, err)
	}
	return nil
}

// Close closes the file.
func (w *Writer) Close() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("tensorboard: close %s: %w", w.path, err)
	}
	return nil
}

// seconds is t as seconds since the epoch, with its fraction.
func seconds(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }
