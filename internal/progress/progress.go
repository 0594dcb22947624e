// Package progress draws progress bars with rate and ETA on a terminal.
// On anything else (a file, a pipe, a CI log) a bar writes nothing, so it
// never interleaves with JSON log lines.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
)

const (
	redrawEvery = 100 * time.Millisecond // at most 10 redraws a second
	barWidth    = 24                     // characters of the bar itself
)

// Bar is a progress bar counting up to a total. Its methods are safe for
// concurrent use.
type Bar struct {
	mu       sync.Mutex
	w        io.Writer
	label    string
	total    int
	n        int
	terminal bool             // draw only on a terminal
	now      func() time.Time // the clock, replaced in tests
	start    time.Time
	drawn    time.Time // last redraw; zero before the first
	done     bool
}

// New returns a bar labelled label counting to total (0 or less: unknown,
// shown without bar and ETA), drawing on w when w is a terminal.
func New(w io.Writer, label string, total int) *Bar {
	return newBar(w, label, total, isTerminal(w), time.Now)
}

func newBar(w io.Writer, label string, total int, terminal bool, now func() time.Time) *Bar {
	return &Bar{w: w, label: label, total: total, terminal: terminal, now: now, start: now()}
}

// Add counts n more done.
func (b *Bar) Add(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += n
	b.redraw()
}

// Set sets the count done to n.
func (b *Bar) Set(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n = n
	b.redraw()
}

// Done draws the final state, with the elapsed time in place of the ETA,
// and ends the line. Later calls to Add, Set and Done do nothing.
func (b *Bar) Done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	if b.terminal {
		fmt.Fprint(b.w, "\r"+b.line(b.now())+"\x1b[K\n")
	}
}

// redraw draws the bar unless it is finished, w is not a terminal or the
// last redraw was less than redrawEvery ago. b.mu is held.
func (b *Bar) redraw() {
	if b.done || !b.terminal {
		return
	}
	now := b.now()
	if !b.drawn.IsZero() && now.Sub(b.drawn) < redrawEvery {
		return
	}
	b.drawn = now
	fmt.Fprint(b.w, "\r"+b.line(now)+"\x1b[K")
}

// line renders "label [=====>    ] 37/100  37%  10.0/s  ETA 0:06", or
// "done in 0:10" in place of the ETA once finished.
func (b *Bar) line(now time.Time) string {
	elapsed := now.Sub(b.start)
	rate := 0.0
	if elapsed > 0 {
		rate = float64(b.n) / elapsed.Seconds()
	}
	var s strings.Builder
	s.WriteString(b.label)
	if b.total > 0 {
		frac := min(max(float64(b.n)/float64(b.total), 0), 1)
		fill := int(frac * barWidth)
		head := ""
		if fill < barWidth {
			head = ">"
		}
		fmt.Fprintf(&s, " [%s%s%s] %d/%d %3.0f%%", strings.Repeat("=", fill), head, strings.Repeat(" ", barWidth-fill-len(head)), b.n, b.total, 100*frac)
	} else {
		fmt.Fprintf(&s, " %d", b.n)
	}
	fmt.Fprintf(&s, "  %.1f/s", rate)
	switch {
	case b.done:
		s.WriteString("  done in " + clock(elapsed))
	case b.total > 0 && rate > 0 && b.n < b.total:
		eta := time.Duration(float64(b.total-b.n) / rate * float64(time.Second))
		s.WriteString("  ETA " + clock(eta))
	}
	return s.String()
}

// clock formats d as m:ss, or h:mm:ss from an hour, rounded to seconds.
func clock(d time.Duration) string {
	sec := int(d.Round(time.Second).Seconds())
	if sec >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", sec/3600, sec/60%60, sec%60)
	}
	return fmt.Sprintf("%d:%02d", sec/60, sec%60)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
