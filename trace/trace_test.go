package trace

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLogIfLong(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	tr := New("List", slog.String("resource", "configmaps"))
	tr.Step("read", slog.Int("items", 3))
	if tr.LogIfLong(context.Background(), logger, time.Hour) {
		t.Fatal("logged a fast trace")
	}
	if buf.Len() != 0 {
		t.Fatalf("fast trace wrote %q", buf.String())
	}
	if !tr.LogIfLong(context.Background(), logger, 0) {
		t.Fatal("slow trace not logged")
	}
	out := buf.String()
	for _, want := range []string{"trace=List", "resource=configmaps", "step0.msg=read", "step0.items=3", "total="} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
}

func TestContextAndNil(t *testing.T) {
	var nilTrace *Trace
	nilTrace.Step("ignored")
	if FromContext(context.Background()) != nil {
		t.Fatal("trace from empty context")
	}
	tr := New("x")
	ctx := WithTrace(context.Background(), tr)
	FromContext(ctx).Step("a")
	for i := 0; i < 12; i++ {
		tr.Step("s")
	}
	if len(tr.steps) != 13 || stepKey(11) != "step11" {
		t.Fatalf("steps %d key %s", len(tr.steps), stepKey(11))
	}
}
