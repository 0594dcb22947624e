package store

import (
	"errors"
	"fmt"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// LockWait says how a store's writes wait while another connection (the
// sqlite3 shell, another program writing to the store) holds the
// database's write lock. SQLite itself waits lockSlice at a time (its busy
// timeout); the wait goes on here, between slices, for as long as the lock
// is held, so that it can end as soon as Stopped says so. The zero value
// waits silently until the lock is released.
type LockWait struct {
	// Stopped, when not nil, is asked between slices: true ends the wait,
	// and the write returns an error wrapping ErrLockWaitStopped with
	// nothing of it stored.
	Stopped func() bool
	// Warn, when not nil, is told after every lockWarnEvery of a write's
	// wait what the write is and how long it has waited.
	Warn func(what string, waited time.Duration)
}

// ErrLockWaitStopped is wrapped by the error of a write whose wait for
// another connection's write lock was ended by LockWait.Stopped.
var ErrLockWaitStopped = errors.New("stopped while waiting for another connection's write lock on the store (nothing of this write was stored)")

const (
	// lockSlice is SQLite's busy timeout: how long one attempt waits for
	// the lock before it returns "database is locked" to retry.
	lockSlice = 250 * time.Millisecond
	// lockPause is the pause between attempts, for a refusal that SQLite
	// gives without waiting (a lock it must not wait for: a rollback
	// journal's reserved lock held elsewhere while it holds a shared one).
	lockPause = 100 * time.Millisecond
	// lockWarnEvery is how often a waiting write is reported.
	lockWarnEvery = 10 * time.Second
)

// retry runs op, the write what, again after each attempt that found the
// database locked by another connection, until it returns anything else
// or Stopped ends the wait (the last attempt's error, wrapping
// ErrLockWaitStopped too). An attempt that fails leaves nothing behind:
// op writes in one transaction, rolled back on an error.
func (w LockWait) retry(what string, op func() error) error {
	start, warn := time.Now(), lockWarnEvery
	for {
		err := op()
		if !locked(err) {
			return err
		}
		if w.Stopped != nil && w.Stopped() {
			return fmt.Errorf("%w: %w", err, ErrLockWaitStopped)
		}
		time.Sleep(lockPause)
		if waited := time.Since(start); waited >= warn {
			if w.Warn != nil {
				w.Warn(what, waited)
			}
			warn += lockWarnEvery
		}
	}
}

// locked reports whether err is SQLite's: the database (or a table) is
// locked by another connection.
func locked(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}
