package trainer

import "time"

// timeLeft estimates how long the remaining iterations take, at the mean
// time of the done iterations that this process ran; 0 when none is done
// or none remains.
func timeLeft(elapsed time.Duration, done, remaining int) time.Duration {
	if done <= 0 || remaining <= 0 {
		return 0
	}
	return time.Duration(float64(elapsed) / float64(done) * float64(remaining))
}
