package informer_test

import (
	"log/slog"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// quiet is a logger for tests that expect errors.
var quiet = slog.New(slog.DiscardHandler)
