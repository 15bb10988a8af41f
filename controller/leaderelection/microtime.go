package leaderelection

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// MicroTimeFormat is Kubernetes' MicroTime layout: RFC 3339 in UTC with
// exactly six fractional digits.
const MicroTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// ErrInvalidMicroTime is returned when decoding a MicroTime fails.
var ErrInvalidMicroTime = errors.New("leaderelection: invalid MicroTime")

// MicroTime is a time with microsecond precision that encodes as
// Kubernetes' metav1.MicroTime. The zero MicroTime encodes as null.
type MicroTime struct {
	time.Time
}

// NewMicroTime truncates t to the microsecond and drops its monotonic
// reading, so it equals what a round trip through JSON gives back.
func NewMicroTime(t time.Time) MicroTime {
	return MicroTime{t.Round(0).Truncate(time.Microsecond)}
}

// MarshalJSON implements json.Marshaler.
func (m MicroTime) MarshalJSON() ([]byte, error) {
	if m.IsZero() {
		return []byte("null"), nil
	}
	if y := m.UTC().Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("%w: year %d outside [0,9999]", ErrInvalidMicroTime, y)
	}
	b := make([]byte, 0, len(MicroTimeFormat)+2)
	b = append(b, '"')
	b = m.UTC().AppendFormat(b, MicroTimeFormat)
	return append(b, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler. It accepts null and any RFC
// 3339 time (servers always send six digits; other precisions are read as
// written and truncated to the microsecond).
func (m *MicroTime) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) {
		*m = MicroTime{}
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMicroTime, err)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMicroTime, err)
	}
	*m = NewMicroTime(t.UTC())
	return nil
}
