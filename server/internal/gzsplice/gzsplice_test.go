package gzsplice

import (
	"bytes"
	"compress/gzip"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
)

func FuzzCombine(f *testing.F) {
	f.Add([]byte(""), []byte(""))
	f.Add([]byte("a"), []byte("b"))
	f.Add([]byte("hello, "), []byte("world"))
	f.Add(bytes.Repeat([]byte{0}, 100), bytes.Repeat([]byte{0xff}, 300))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		want := crc32.ChecksumIEEE(append(append([]byte(nil), a...), b...))
		got := Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b)))
		if got != want {
			t.Fatalf("Combine(crc(%q), crc(%q), %d) = %#x, want %#x", a, b, len(b), got, want)
		}
	})
}

// Lengths far beyond what a test can hold: combining must be associative,
// which exercises every entry of the x^(2^k) table.
func TestCombineAssociative(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		x, y, z := r.Uint32(), r.Uint32(), r.Uint32()
		n, m := r.Int64N(1<<62), r.Int64N(1<<62)
		left := Combine(Combine(x, y, n), z, m)
		right := Combine(x, Combine(y, z, m), n+m)
		if left != right {
			t.Fatalf("not associative for n=%d m=%d: %#x != %#x", n, m, left, right)
		}
	}
}

// A long run of zero bytes checked against hash/crc32 itself.
func TestCombineLong(t *testing.T) {
	zeros := make([]byte, 3<<20+17)
	a := []byte("prefix")
	want := crc32.Update(crc32.ChecksumIEEE(a), crc32.IEEETable, zeros)
	if got := Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(zeros), int64(len(zeros))); got != want {
		t.Fatalf("got %#x, want %#x", got, want)
	}
}

// splice writes parts, alternating live writes and segments as kinds
// says, and returns the gzip stream and the plain bytes it must hold.
func splice(t *testing.T, parts [][]byte, segment []bool) (gz, plain []byte) {
	t.Helper()
	var out bytes.Buffer
	z := NewWriter(&out)
	for i, p := range parts {
		plain = append(plain, p...)
		if segment[i] && len(p) < 8 {
			// Short parts as stored blocks, as separators between runs.
			if err := z.WriteSegment(Stored(p)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if segment[i] {
			b := NewBuilder()
			// Write a segment in two pieces, as a run of items is.
			h := len(p) / 2
			b.Write(p[:h])
			b.Write(p[h:])
			if err := z.WriteSegment(b.Segment()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := z.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), plain
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	r.Multistream(false)
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("gunzip: %v", err) // includes a CRC or size mismatch
	}
	return got
}

// FuzzSplice cuts data into parts at the given cut points, each part live
// or a segment as the mask's bits say; compress/gzip must read back
// exactly data, its checksum and length included.
func FuzzSplice(f *testing.F) {
	f.Add([]byte(`{"items":[{"a":1},{"a":2},{"a":3}]}`), []byte{3, 9, 17, 25}, uint64(0b1010))
	f.Add([]byte(""), []byte{}, uint64(1))
	f.Add(bytes.Repeat([]byte("abcabcabc"), 5000), []byte{255, 1, 0, 40}, uint64(0b0110))
	f.Add([]byte(`[{"a":1},{"b":2},{"c":3}]`), []byte{3, 1, 3, 1, 3}, uint64(0b11111)) // segment, stored comma, segment, ...
	f.Fuzz(func(t *testing.T, data, cuts []byte, mask uint64) {
		var parts [][]byte
		var seg []bool
		rest := data
		for i, c := range cuts {
			n := min(int(c)*int(c), len(rest)) // cuts up to ~64 KiB apart; 0-3 bytes: stored
			parts = append(parts, rest[:n])
			seg = append(seg, mask>>(i%64)&1 == 1)
			rest = rest[n:]
		}
		parts = append(parts, rest)
		seg = append(seg, mask>>63 == 1)
		gz, plain := splice(t, parts, seg)
		if got := gunzip(t, gz); !bytes.Equal(got, plain) || !bytes.Equal(plain, data) {
			t.Fatalf("gunzip gave %d bytes, want %d", len(got), len(data))
		}
	})
}

// Large random-ish parts, most of them segments, as a list is written:
// the live compressor's window must never reach into a segment.
func TestSpliceLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{`{"kind":"ConfigMap"`, `"data":`, `"key-`, `",`, "value", "}", ","}
	var parts [][]byte
	var seg []bool
	for range 60 {
		var p []byte
		for n := r.IntN(200_000); len(p) < n; {
			p = append(p, words[r.IntN(len(words))]...)
		}
		parts = append(parts, p)
		seg = append(seg, r.IntN(3) > 0)
	}
	gz, plain := splice(t, parts, seg)
	if got := gunzip(t, gz); !bytes.Equal(got, plain) {
		t.Fatalf("gunzip differs: %d bytes, want %d", len(got), len(plain))
	}
}
