package controller

import (
	"errors"
)

var (
	// ErrTerminal is matched (errors.Is) by every error made by
	// TerminalError.
	ErrTerminal = errors.New("controller: terminal error")
	// ErrNotSynced is returned by Run when ctx ends before every
	// HasSynced function reported true; no worker was started.
	ErrNotSynced = errors.New("controller: caches did not sync")
	// ErrAlreadyRunning is returned by a second Run of the same Controller.
	ErrAlreadyRunning = errors.New("controller: already running")
)

// TerminalError marks err as one that retrying cannot fix (an invalid
// spec, a permanent refusal): the controller logs it and forgets the key
// instead of retrying it. The result wraps err, so errors.Is and errors.As
// still find it, and matches ErrTerminal. TerminalError(nil) is nil.
func TerminalError(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

type terminalError struct{ err error }

func (e *terminalError) Error() string { return "terminal error: " + e.err.Error() }

func (e *terminalError) Unwrap() error { return e.err }

func (e *terminalError) Is(target error) bool { return target == ErrTerminal }

// IsTerminal reports whether err is, or wraps, a TerminalError.
func IsTerminal(err error) bool { return errors.Is(err, ErrTerminal) }
