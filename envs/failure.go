package envs

import "errors"

// failure marks an error as the tool's own breakdown rather than a fault
// of the call.
type failure struct{ err error }

func (f failure) Error() string { return f.err.Error() }
func (f failure) Unwrap() error { return f.err }

// Failure marks err, returned by Tool.Call, as the tool's own breakdown (a
// tool server that died, a service that cannot be reached) rather than a
// fault of the call. The model still sees "Error: ..." and the episode
// goes on, but like a panic or a timeout the call counts as neither valid
// nor invalid for the process rewards. Failure(nil) is nil.
func Failure(err error) error {
	if err == nil {
		return nil
	}
	return failure{err}
}

// IsFailure reports whether err, or an error it wraps, was marked by
// Failure.
func IsFailure(err error) bool {
	var f failure
	return errors.As(err, &f)
}
