package job

import (
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/internal/logging"
	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trainer/config"
)

// OpenRun takes a run's folder for this process, before anything is
// written there: an exclusive lock on <run>/run.lock, so that a second
// train, sft or eval of the run is refused, naming the process that
// holds it. Then it sets up the run's logging: console or JSON on stderr,
// and JSON lines in <run>/log.jsonl, every line carrying the run's name.
// Closing the closer ends the logging and releases the lock.
func OpenRun(cfg config.Config) (zerolog.Logger, io.Closer, error) {
	dir := trainer.RunDir(cfg)
	lock, err := lockRun(dir)
	if err != nil {
		return zerolog.Nop(), nil, err
	}
	l, closer, err := logging.New(cfg.Logging.Level, cfg.Logging.Format, os.Stderr, filepath.Join(dir, "log.jsonl"))
	if err != nil {
		lock.Close()
		return zerolog.Nop(), nil, err
	}
	return logging.WithRun(l, cfg.Run.Name), closeAll{closer, lock}, nil
}

// closeAll is closers closed as one, in order.
type closeAll []io.Closer

// Close closes every closer, in order, and joins their errors.
func (cs closeAll) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
