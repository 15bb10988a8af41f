// Package backoff holds the two retry primitives the library and the
// server share: Sleep, a wait that ends early with its context, and
// Exponential, a capped, optionally jittered, doubling delay.
//
// It imports only the standard library, so every package may use it; the
// client library's packages (client, informer, controller) and the
// server's (storage) both do.
package backoff
