package server

import (
	"errors"
	"testing"

	"github.com/listwatch/listwatch/server/storage/direct"
)

// TestNewRequiresReader: the server makes no reader of its own; without
// Reader or Readers New refuses, and with either it accepts.
func TestNewRequiresReader(t *testing.T) {
	store := &recordingStore{}
	if _, err := New(Config{Store: store}); !errors.Is(err, ErrNoReader) {
		t.Fatalf("New without a reader: %v, want ErrNoReader", err)
	}
	if _, err := New(Config{Reader: direct.New(store)}); !errors.Is(err, ErrNoStore) {
		t.Fatalf("New without a store: %v, want ErrNoStore", err)
	}
	if _, err := New(Config{Store: store, Reader: direct.New(store)}); err != nil {
		t.Fatalf("New with Reader: %v", err)
	}
	if _, err := New(Config{Store: store, Readers: sharedReaders{direct.New(store)}}); err != nil {
		t.Fatalf("New with Readers: %v", err)
	}
}
