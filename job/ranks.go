package job

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/internal/logging"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/dist"
)

// rankLogger is OpenRun for rank 0 (or a single process); the other
// ranks log warnings and errors to stderr only, tagged with their rank.
func rankLogger(cfg config.Config, env dist.Env, ranked bool) (zerolog.Logger, io.Closer, error) {
	if !ranked || env.Rank == 0 {
		l, c, err := OpenRun(cfg)
		if ranked {
			l = l.With().Int("rank", 0).Logger()
		}
		return l, c, err
	}
	l, c, err := logging.New(cfg.Logging.Level, cfg.Logging.Format, os.Stderr, "")
	if err != nil {
		return l, c, err
	}
	l = logging.WithRun(l, cfg.Run.Name).With().Int("rank", env.Rank).Logger()
	return l.Level(max(l.GetLevel(), zerolog.WarnLevel)), c, nil
}

// placeRank adapts the config to this rank's place on its machine: the
// cores are shared among the machine's ranks, and on CUDA each rank
// takes the GPU of its LOCAL_RANK.
func placeRank(cfg *config.Config, env dist.Env) {
	if cfg.Device.Threads == 0 {
		cfg.Device.Threads = max(1, runtime.NumCPU()/env.LocalWorld)
	}
	if strings.HasPrefix(cfg.Device.Device, "cuda") {
		cfg.Device.Device = fmt.Sprintf("cuda:%d", env.LocalRank)
	}
}
