package etcdtest_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartServesAndCleansUp(t *testing.T) {
	for _, name := range []string{"a", "b", "c"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := etcdtest.Start(t)
			ctx := context.Background()
			rev, err := e.Store.Create(ctx, "/registry/pods/default/x", []byte(`{"metadata":{"name":"x"}}`))
			if err != nil {
				t.Fatal(err)
			}
			kv, err := e.Store.Get(ctx, "/registry/pods/default/x")
			if err != nil {
				t.Fatal(err)
			}
			if kv.Revision != rev {
				t.Fatalf("revision %d, want %d", kv.Revision, rev)
			}
		})
	}
}
