package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/storage"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestCompactorCoordination drives two Compactors sharing one etcd round
// by round: in every round after the first exactly one of them compacts,
// and always to the revision seen one round earlier.
func TestCompactorCoordination(t *testing.T) {
	_, s := startForTest(t)
	ctx := context.Background()
	a := &Compactor{Store: s, Logger: quietLogger()}
	b := &Compactor{Store: s, Logger: quietLogger()}
	var lastRoundRev, lastCompacted int64
	for round := 0; round < 6; round++ {
		// A write between rounds, so every round sees a new revision.
		if _, err := s.Create(ctx, fmt.Sprintf("/registry/pods/default/p%d", round), []byte(`{"metadata":{}}`)); err != nil {
			t.Fatal(err)
		}
		first, second := a, b
		if round%2 == 1 {
			first, second = b, a // who ticks first must not matter
		}
		compacted := 0
		for _, c := range []*Compactor{first, second} {
			rev, err := c.tick(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rev == 0 {
				continue
			}
			compacted++
			lastCompacted = rev
			if rev != lastRoundRev {
				t.Errorf("round %d: compacted to %d, want the previous round's revision %d", round, rev, lastRoundRev)
			}
		}
		want := 1
		if round == 0 {
			want = 0 // no revision from an interval ago yet
		}
		if compacted != want {
			t.Errorf("round %d: %d compactions, want %d", round, compacted, want)
		}
		if first.rev != second.rev {
			t.Fatalf("round %d: compactors saw revisions %d and %d, want the same", round, first.rev, second.rev)
		}
		lastRoundRev = first.rev
	}
	if _, err := s.List(ctx, "/registry/", storage.ListOptions{Revision: lastCompacted - 1}); !errors.Is(err, storage.ErrCompacted) {
		t.Errorf("list before the last compaction: %v, want ErrCompacted", err)
	}
}

// TestCompactorRun runs a Compactor with a short interval until the
// store is compacted past its first revisions, then stops it.
func TestCompactorRun(t *testing.T) {
	_, s := startForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	first, err := s.Create(ctx, "/registry/pods/default/a", []byte(`{"metadata":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "/registry/pods/default/a", []byte(`{"metadata":{"labels":{"x":"y"}}}`), first); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	c := &Compactor{Store: s, Interval: 20 * time.Millisecond, Logger: quietLogger()}
	go func() { done <- c.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := s.List(context.Background(), "/registry/", storage.ListOptions{Revision: first})
		if errors.Is(err, storage.ErrCompacted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("revision never compacted")
		}
		time.Sleep(10 * time.Millisecond) // polling a real condition
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
}
