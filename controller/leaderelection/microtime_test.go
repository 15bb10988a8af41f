package leaderelection

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestMicroTimeWireFormat(t *testing.T) {
	ts := time.Date(2026, 11, 30, 10, 4, 5, 123456789, time.FixedZone("X", 3600))
	b, err := json.Marshal(NewMicroTime(ts))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `"2026-11-30T09:04:05.123456Z"`; got != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
	if b, _ := json.Marshal(MicroTime{}); string(b) != "null" {
		t.Fatalf("zero MicroTime = %s, want null", b)
	}
	var m MicroTime
	if err := json.Unmarshal([]byte(`"not a time"`), &m); !errors.Is(err, ErrInvalidMicroTime) {
		t.Fatalf("bad input: %v, want ErrInvalidMicroTime", err)
	}
}

// FuzzMicroTimeUnmarshal: any accepted input re-encodes to a fixed point
// that decodes to the same instant, truncated to the microsecond.
func FuzzMicroTimeUnmarshal(f *testing.F) {
	for _, s := range []string{
		`"2026-11-30T09:04:05.123456Z"`, `"2026-11-30T09:04:05Z"`, `"2026-11-30T09:04:05.123456789+05:30"`,
		`null`, `"0000-01-01T00:00:00.000000Z"`, `"9999-12-31T23:59:59.999999-01:00"`, `"x"`, `12`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m MicroTime
		if err := json.Unmarshal(data, &m); err != nil {
			return
		}
		if m.Nanosecond()%1000 != 0 {
			t.Fatalf("decoded %v keeps sub-microsecond digits", m.Time)
		}
		b1, err := json.Marshal(m)
		if err != nil {
			if !errors.Is(err, ErrInvalidMicroTime) {
				t.Fatalf("Marshal(%v): %v", m.Time, err)
			}
			return // a year Kubernetes cannot write either
		}
		var m2 MicroTime
		if err := json.Unmarshal(b1, &m2); err != nil {
			t.Fatalf("re-decoding our own %s: %v", b1, err)
		}
		if !m2.Equal(m.Time) {
			t.Fatalf("round trip changed %v to %v", m.Time, m2.Time)
		}
		b2, _ := json.Marshal(m2)
		if string(b1) != string(b2) {
			t.Fatalf("encoding not a fixed point: %s then %s", b1, b2)
		}
	})
}
