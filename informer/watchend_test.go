package informer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/wire"
)

func TestClassifyWatchEnd(t *testing.T) {
	tooLarge := wire.NewTimeout("Too large resource version")
	tooLarge.Details = &wire.StatusDetails{Causes: []wire.StatusCause{{Type: "ResourceVersionTooLarge"}}}
	cases := []struct {
		name   string
		err    error
		end    watchEnd
		reason RelistReason
	}{
		{"clean end", io.EOF, rewatch, ""},
		{"our deadline", context.DeadlineExceeded, rewatch, ""},
		{"no error", nil, rewatch, ""},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), retryWatch, ""},
		{"connection refused", syscall.ECONNREFUSED, retryWatch, ""},
		{"truncated stream", io.ErrUnexpectedEOF, retryWatch, ""},
		{"500", wire.NewInternalError(errors.New("boom")), retryWatch, ""},
		{"503", wire.NewServiceUnavailable("later"), retryWatch, ""},
		{"429", wire.NewTooManyRequests(1), retryWatch, ""},
		{"410 Expired", wire.NewResourceExpired("too old"), relist, RelistExpired},
		{"410 Gone", wire.NewGone("gone"), relist, RelistExpired},
		{"too large resourceVersion", tooLarge, relist, RelistResourceVersionRefused},
		{"400", wire.NewBadRequest("bad rv"), relist, RelistResourceVersionRefused},
		{"403", wire.NewForbidden(wire.GroupResource{Resource: "configmaps"}, "", "no"), relist, RelistWatchRefused},
	}
	for _, tc := range cases {
		end, reason := classifyWatchEnd(tc.err)
		if end != tc.end || reason != tc.reason {
			t.Errorf("%s: (%v, %q), want (%v, %q)", tc.name, end, reason, tc.end, tc.reason)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	if d := retryAfter(wire.NewTooManyRequests(3)); d != 3*time.Second {
		t.Fatalf("retryAfter = %v, want 3s", d)
	}
	if d := retryAfter(wire.NewTooManyRequests(1 << 30)); d != maxRetryAfter {
		t.Fatalf("retryAfter of a huge Retry-After = %v, want the cap %v", d, maxRetryAfter)
	}
	if d := retryAfter(io.EOF); d != 0 {
		t.Fatalf("retryAfter(EOF) = %v", d)
	}
}
