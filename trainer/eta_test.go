package trainer

import (
	"testing"
	"time"
)

func TestTimeLeft(t *testing.T) {
	for _, c := range []struct {
		elapsed         time.Duration
		done, remaining int
		want            time.Duration
	}{
		{90 * time.Second, 3, 7, 210 * time.Second}, // 30 s an iteration, 7 to go
		{10 * time.Second, 4, 1, 2500 * time.Millisecond},
		{time.Minute, 5, 0, 0}, // finished
		{0, 0, 10, 0},          // nothing measured yet
	} {
		if got := timeLeft(c.elapsed, c.done, c.remaining); got != c.want {
			t.Errorf("timeLeft(%v, %d done, %d remaining) = %v, want %v", c.elapsed, c.done, c.remaining, got, c.want)
		}
	}
}
