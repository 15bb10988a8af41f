package controller_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/listwatch/listwatch/controller"
)

func Example() {
	done := make(chan struct{})
	r := controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
		fmt.Println("reconciled", key)
		close(done)
		return controller.Result{}, nil
	})
	c, err := controller.New(r, controller.Options{
		Name:   "example",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()

	c.Enqueue("default/pod-a") // normally done by informer event handlers
	<-done
	cancel()
	fmt.Println("Run:", <-errc)
	// Output:
	// reconciled default/pod-a
	// Run: <nil>
}
