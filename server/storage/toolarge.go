package storage

import "fmt"

// TooLargeResourceVersionError is ErrTooLargeResourceVersion with the
// numbers kube-apiserver puts in its 504 ("Too large resource version:
// R, current: C"). Match it with errors.Is(err, ErrTooLargeResourceVersion)
// and errors.As for the numbers.
type TooLargeResourceVersionError struct {
	// Requested is the revision the request needed.
	Requested int64
	// Current is the newest revision the reader had; 0 if unknown.
	Current int64
}

func (e *TooLargeResourceVersionError) Error() string {
	return fmt.Sprintf("storage: too large resource version: %d, current: %d", e.Requested, e.Current)
}

// Is makes errors.Is(err, ErrTooLargeResourceVersion) true.
func (e *TooLargeResourceVersionError) Is(target error) bool {
	return target == ErrTooLargeResourceVersion
}
