package informer_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/wire"
)

// An informer created by For after the factory's Run returned must not be
// started by the factory: Run has promised its goroutines are gone, and
// starting one then would also race its WaitGroup's Wait.
func TestFactoryForAfterRunDoesNotStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := informer.NewFactory(informer.ReflectorOptions{})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- f.Run(ctx) }()
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}

		var calls atomic.Int32
		lw := informer.ListWatchFuncs[U]{
			ListFunc: func(context.Context, wire.ListOptions) (*wire.List[U], error) {
				calls.Add(1)
				return &wire.List[U]{}, nil
			},
			WatchFunc: func(context.Context, wire.ListOptions) (client.Watcher[U], error) {
				calls.Add(1)
				return nil, errors.New("no watch here")
			},
		}
		inf, err := informer.For(f, informer.Key{Resource: "configmaps"}, func() informer.ListerWatcher[U] { return lw }, informer.Options[U]{})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // a goroutine started by For has run by now
		if n := calls.Load(); n != 0 {
			t.Fatalf("the stopped factory started the new informer (%d list/watch calls)", n)
		}
		stopped, stop := context.WithCancel(t.Context())
		stop()
		if err := inf.Run(stopped); err != nil {
			t.Fatalf("running the informer ourselves: %v", err)
		}
	})
}
