package dist

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Launch is `trainer train --nproc N` on one machine: it starts N copies of
// this program with the same arguments, each placed by the torchrun
// variables (MASTER_ADDR 127.0.0.1 and a free port), and supervises them
// like torchrun does. SIGINT and SIGTERM are passed on to every rank.
// When a rank fails, the others get SIGTERM and, after grace, SIGKILL; the
// error names the rank that failed first. Ranks also die with the
// launcher (parent-death signal), so none is left behind.
func Launch(n int, args []string, grace time.Duration, log zerolog.Logger) error {
	if n < 2 {
		return fmt.Errorf("launch: --nproc %d: want at least 2", n)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return fmt.Errorf("launch: a free port for the rendezvous store: %w", err)
	}
	type exit struct {
		rank int
		err  error
	}
	exits := make(chan exit, n)
	procs := make([]*os.Process, 0, n)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	killAll := func(sig syscall.Signal) {
		for _, p := range procs {
			_ = p.Signal(sig)
		}
	}
	for r := 0; r < n; r++ {
		e := Env{Rank: r, World: n, LocalRank: r, LocalWorld: n, MasterAddr: "127.0.0.1", MasterPort: port}
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), e.Vars()...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
		// Own process group: a Ctrl-C at the terminal reaches the launcher
		// only, which passes it on once.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err := cmd.Start(); err != nil {
			killAll(syscall.SIGKILL)
			return fmt.Errorf("launch rank %d: %w", r, err)
		}
		procs = append(procs, cmd.Process)
		go func(r int) { exits <- exit{r, cmd.Wait()} }(r)
	}
	log.Info().Int("nproc", n).Int("port", port).Msg("launched local ranks (MASTER_ADDR=127.0.0.1)")
	var first error
	var killAt <-chan time.Time
	for left := n; left > 0; {
		select {
		case s := <-sigs:
			log.Warn().Str("signal", s.String()).Msg("passing the signal on to every rank")
			killAll(s.(syscall.Signal))
		case e := <-exits:
			left--
			if e.err == nil || first != nil {
				continue
			}
			var ee *exec.ExitError
			if errors.As(e.err, &ee) {
				first = fmt.Errorf("rank %d failed (%s): the job was stopped; see rank %d's log above", e.rank, ee.ProcessState, e.rank)
			} else {
				first = fmt.Errorf("rank %d: %w", e.rank, e.err)
			}
			if left > 0 {
				log.Error().Int("rank", e.rank).Str("status", e.err.Error()).Int("others", left).Msg("a rank failed: stopping the others")
				killAll(syscall.SIGTERM)
				killAt = time.After(grace)
			}
		case <-killAt:
			log.Error().Dur("grace", grace).Msg("ranks still running after SIGTERM: killing them")
			killAll(syscall.SIGKILL)
		}
	}
	return first
}

// FreePort asks the kernel for a free TCP port on loopback, for a local
// rendezvous (another process may take it before it is used; the
// rendezvous then fails with a clear error).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
