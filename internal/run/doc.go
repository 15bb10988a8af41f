// Package run is the one lifecycle of listwatch's long-lived parts: a
// Group runs named goroutines under one context and returns only after
// all of them have ended.
//
// # Contract
//
//   - Go may be called before, during or after Run. Before Run the
//     goroutine is queued and starts when Run does; while Run runs it
//     starts at once; once Run has begun stopping, Go starts nothing and
//     reports false. So every goroutine that starts is waited for, and a
//     caller that needs "started or refused" gets it atomically.
//   - Run blocks until its ctx ends or a goroutine returns a non-nil
//     error. Either way it then cancels the context every goroutine got,
//     waits for all of them, and returns the first error (wrapped with the
//     goroutine's name), or nil if ctx ended first. A goroutine that
//     returns nil stops alone; the others go on.
//   - Errors returned once the goroutines' context is done (ctx ended, or
//     another goroutine failed first) are dropped: they are most often
//     the cancellation's echo. context.Canceled is never an error of the
//     group.
//   - Run runs once; a second call returns ErrRunning.
//
// It is errgroup with names, goroutines added while it runs, and Run's
// "block until ctx ends" instead of Wait's "until the goroutines end".
// A Group holds no goroutine of its own and its zero value is ready.
package run
