package progress

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time                { return c.t }
func (c *fakeClock) at(d time.Duration) *fakeClock { c.t = time.Unix(1000, 0).Add(d); return c }

func TestSilentWhenNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	f, err := os.Create(filepath.Join(t.TempDir(), "out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []io.Writer{&buf, f} {
		b := New(w, "train", 10)
		b.Add(3)
		b.Set(10)
		b.Done()
	}
	st, _ := f.Stat()
	if buf.Len() != 0 || st.Size() != 0 {
		t.Fatalf("wrote %q and %d bytes to non-terminals", buf.String(), st.Size())
	}
}

func TestDrawOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	clk := (&fakeClock{}).at(0)
	b := newBar(&buf, "train", 100, true, clk.now)

	// 37 done after 3.7 s: 10/s, 63 left -> 6.3 s -> "0:06";
	// bar fill int(0.37*24) = 8, then ">" and 15 spaces.
	clk.at(3700 * time.Millisecond)
	b.Add(37)
	want := "\rtrain [========>               ] 37/100  37%  10.0/s  ETA 0:06\x1b[K"
	if buf.String() != want {
		t.Fatalf("first draw\n%q\nwant\n%q", buf.String(), want)
	}

	// 50 ms later: throttled, nothing drawn
	buf.Reset()
	clk.at(3750 * time.Millisecond)
	b.Add(1)
	if buf.Len() != 0 {
		t.Fatalf("redraw after 50 ms: %q", buf.String())
	}

	// 150 ms after the first draw: 40 done in 3.85 s = 10.39/s,
	// 60 left -> 5.77 s -> "0:06"; fill int(0.4*24) = 9.
	clk.at(3850 * time.Millisecond)
	b.Add(2)
	want = "\rtrain [=========>              ] 40/100  40%  10.4/s  ETA 0:06\x1b[K"
	if buf.String() != want {
		t.Fatalf("second draw\n%q\nwant\n%q", buf.String(), want)
	}

	// finished at 10 s: full bar, 10.0/s, elapsed instead of ETA, newline
	buf.Reset()
	clk.at(10 * time.Second)
	b.Set(100)
	buf.Reset()
	b.Done()
	want = "\rtrain [========================] 100/100 100%  10.0/s  done in 0:10\x1b[K\n"
	if buf.String() != want {
		t.Fatalf("done\n%q\nwant\n%q", buf.String(), want)
	}

	// nothing after Done
	buf.Reset()
	clk.at(20 * time.Second)
	b.Add(5)
	b.Done()
	if buf.Len() != 0 {
		t.Fatalf("drew after Done: %q", buf.String())
	}
}

func TestUnknownTotal(t *testing.T) {
	var buf bytes.Buffer
	clk := (&fakeClock{}).at(0)
	b := newBar(&buf, "rollouts", 0, true, clk.now)
	clk.at(2 * time.Second)
	b.Add(5) // 5 in 2 s = 2.5/s, no bar, no ETA
	if want := "\rrollouts 5  2.5/s\x1b[K"; buf.String() != want {
		t.Fatalf("%q, want %q", buf.String(), want)
	}
}

func TestConcurrentAdd(t *testing.T) {
	var buf bytes.Buffer
	b := newBar(&buf, "c", 8000, true, time.Now)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				b.Add(1)
			}
		}()
	}
	wg.Wait()
	b.Done()
	out := buf.String()
	if !strings.HasSuffix(out, "\n") || !strings.Contains(out[strings.LastIndex(out, "\r"):], " 8000/8000 100%") {
		t.Fatalf("final line of %q does not count 8000", out)
	}
	// throttled: far fewer redraws than the 8000 Adds
	if n := strings.Count(out, "\r"); n > 100 {
		t.Errorf("%d redraws for 8000 adds in well under a second", n)
	}
}

func TestClock(t *testing.T) {
	cases := map[time.Duration]string{
		0:                        "0:00",
		59600 * time.Millisecond: "1:00", // rounds to 60 s
		3725 * time.Second:       "1:02:05",
	}
	for d, want := range cases {
		if got := clock(d); got != want {
			t.Errorf("clock(%v) = %q, want %q", d, got, want)
		}
	}
}
