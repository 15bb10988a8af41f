package storage

import "sync"

// Memo holds a second encoding of a value the watch cache keeps (the
// server's protobuf bytes of an object, or of a watch frame): built at
// most once, by the first reader that asks, then shared by every request
// and watcher that sends it. Readers without a cache hand out nil Memos,
// and a nil Memo builds on every call.
type Memo struct {
	once sync.Once
	b    []byte
	err  error
}

// Get returns the memoized bytes, building them with build the first time.
// Every caller of one Memo must pass an equivalent build.
func (m *Memo) Get(build func() ([]byte, error)) ([]byte, error) {
	if m == nil {
		return build()
	}
	m.once.Do(func() { m.b, m.err = build() })
	return m.b, m.err
}
