package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// countingRecorder counts the writes and flushes a handler makes.
type countingRecorder struct {
	*httptest.ResponseRecorder
	writes, flushes int
}

func (r *countingRecorder) Write(b []byte) (int, error) {
	r.writes++
	return r.ResponseRecorder.Write(b)
}

func (r *countingRecorder) Flush() {
	r.flushes++
	r.ResponseRecorder.Flush()
}

// burstWriter is protoWriter's eventWriter, writing to a counting
// recorder.
func burstWriter(t *testing.T, r *resource, proto bool) (*eventWriter, *countingRecorder) {
	ew, rec := protoWriter(t, r)
	cr := &countingRecorder{ResponseRecorder: rec}
	ew.w, ew.flusher, ew.out.proto = cr, cr, proto
	return ew, cr
}

// burstEvents are initial events (no shared frame) of ConfigMaps whose
// sizes vary around 6 KiB, one of them larger than a burst.
func burstEvents(n int) []storage.WatchEvent {
	evs := make([]storage.WatchEvent, n)
	for i := range evs {
		size := 5<<10 + i*97%2048
		if i == n/2 {
			size = watchBurst + 1000
		}
		obj := strings.Replace(testCM, `"k":"v"`, `"k":"`+strings.Repeat(string(rune('a'+i%26)), size)+`"`, 1)
		evs[i] = storage.WatchEvent{Type: wire.Added, Object: []byte(obj), Revision: int64(7 + i), ObjectAlt: &storage.Memo{}}
	}
	return evs
}

// TestWatchBurstGathersWrites: the events of a burst (here a batch read
// ahead, as the stream holding them ready) reach the response in writes
// of at most watchBurst bytes, flushed once at its end, and the bytes are
// those of the same events each written and flushed alone; in JSON and
// in protobuf, with a frame larger than a burst among them.
func TestWatchBurstGathersWrites(t *testing.T) {
	r := builtinResources()[1]
	for _, proto := range []bool{true, false} {
		evs := burstEvents(60)
		alone, aloneRec := burstWriter(t, r, proto)
		for _, ev := range evs {
			if !alone.write(ev) {
				t.Fatal("write failed")
			}
		}
		if aloneRec.writes != len(evs) || aloneRec.flushes != len(evs) {
			t.Fatalf("proto=%v: events written alone: %d writes, %d flushes, want %d each", proto, aloneRec.writes, aloneRec.flushes, len(evs))
		}

		burst, burstRec := burstWriter(t, r, proto)
		for i, ev := range evs {
			burst.pending = len(evs) - 1 - i
			if !burst.write(ev) {
				t.Fatal("write failed")
			}
		}
		total := aloneRec.Body.Len()
		if max := total/(watchBurst/2) + 3; burstRec.writes > max || burstRec.flushes != 1 {
			t.Fatalf("proto=%v: a burst of %d bytes took %d writes (want at most %d) and %d flushes (want 1)", proto, total, burstRec.writes, max, burstRec.flushes)
		}
		if !bytes.Equal(burstRec.Body.Bytes(), aloneRec.Body.Bytes()) {
			t.Fatalf("proto=%v: a burst's bytes differ from its events written alone", proto)
		}
		if burst.burst != nil {
			t.Fatalf("proto=%v: the burst's buffer is kept after its flush", proto)
		}
	}
}

// TestWatchBurstWrittenAtEnd: a watch that ends in the middle of a burst
// (its deadline passes while the stream holds more) still sends the
// events it framed: end writes them before the stream closes.
func TestWatchBurstWrittenAtEnd(t *testing.T) {
	r := builtinResources()[1]
	for _, proto := range []bool{true, false} {
		evs := burstEvents(3)[:1]
		alone, aloneRec := burstWriter(t, r, proto)
		alone.write(evs[0])

		ew, rec := burstWriter(t, r, proto)
		ew.pending = 1
		if !ew.write(evs[0]) {
			t.Fatal("write failed")
		}
		ew.writeError(wire.NewResourceExpired("too old resource version: 1 (5)"))
		if rec.Body.Len() != 0 {
			t.Fatalf("proto=%v: %d bytes written mid-burst", proto, rec.Body.Len())
		}
		ew.end(http.NewResponseController(rec))
		got := rec.Body.Bytes()
		if !bytes.HasPrefix(got, aloneRec.Body.Bytes()) || len(got) == aloneRec.Body.Len() {
			t.Fatalf("proto=%v: at the end the stream holds %d bytes, want the event's %d and the error after them", proto, len(got), aloneRec.Body.Len())
		}
		if !bytes.Contains(got[aloneRec.Body.Len():], []byte("too old resource version")) {
			t.Fatalf("proto=%v: the error is not at the end: %q", proto, got[aloneRec.Body.Len():])
		}
	}
}
