// Package gzsplice writes one gzip stream from two kinds of part: bytes
// compressed as they are written, and segments compressed earlier (once)
// and copied in as they are.
//
// A segment is raw DEFLATE that starts with a fresh dictionary and ends
// byte-aligned with a sync flush and no final block, with the CRC-32 and
// length of the bytes it holds. Such DEFLATE can be placed after any
// other that also ends byte-aligned: it refers to nothing before itself.
// The gzip trailer's CRC-32 of the whole is combined from the parts'
// (Combine), so a segment's bytes are never read again.
//
// The server's watch cache keeps segments of unchanged runs of objects,
// so that a large gzip-compressed LIST compresses only what changed since
// the last one.
package gzsplice

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
)

// Level is the compression level of live parts and of segments: gzip's
// fastest, kube-apiserver's level for responses.
const Level = flate.BestSpeed

// Segment is compressed data ready to be spliced into a stream.
type Segment struct {
	Deflate []byte // raw DEFLATE, fresh dictionary, ends in a sync flush
	CRC     uint32 // CRC-32 (IEEE) of the uncompressed bytes
	Size    int64  // length of the uncompressed bytes
}

// Stored returns a segment holding p uncompressed, in one DEFLATE stored
// block: for a few bytes between two segments (a separator), which
// spares ending the live part and restarting it. p must be at most 65535
// bytes.
func Stored(p []byte) Segment {
	if len(p) > 0xffff {
		panic("gzsplice: stored block over 65535 bytes")
	}
	// A stored block starts byte-aligned: BFINAL 0, BTYPE 00, padding,
	// then LEN and its complement NLEN, little-endian.
	b := make([]byte, 5, 5+len(p))
	binary.LittleEndian.PutUint16(b[1:], uint16(len(p)))
	binary.LittleEndian.PutUint16(b[3:], ^uint16(len(p)))
	return Segment{Deflate: append(b, p...), CRC: crc32.ChecksumIEEE(p), Size: int64(len(p))}
}

var flateWriters = sync.Pool{New: func() any {
	fw, _ := flate.NewWriter(nil, Level)
	return fw
}}

// Builder compresses bytes into a Segment.
type Builder struct {
	fw   *flate.Writer
	buf  bytes.Buffer
	crc  uint32
	size int64
}

// NewBuilder returns an empty Builder. Call Segment to end it and give
// back its compressor.
func NewBuilder() *Builder {
	b := &Builder{fw: flateWriters.Get().(*flate.Writer)}
	b.fw.Reset(&b.buf)
	return b
}

// Write compresses p into the segment; it cannot fail.
func (b *Builder) Write(p []byte) (int, error) {
	b.crc = crc32.Update(b.crc, crc32.IEEETable, p)
	b.size += int64(len(p))
	return b.fw.Write(p) // writes to a bytes.Buffer, which cannot fail
}

// Segment ends the segment and returns it, holding a copy of exactly its
// compressed bytes. The Builder cannot be used afterwards.
func (b *Builder) Segment() Segment {
	_ = b.fw.Flush()
	b.fw.Reset(nil)
	flateWriters.Put(b.fw)
	b.fw = nil
	return Segment{Deflate: bytes.Clone(b.buf.Bytes()), CRC: b.crc, Size: b.size}
}

// header is a gzip member header: no name, no time, level "fastest",
// operating system "unknown", as compress/gzip writes it at BestSpeed.
var header = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 0xff}

// Writer writes one gzip member to an io.Writer. Write compresses;
// WriteSegment splices; Close ends the stream. It does not buffer its
// output beyond what the compressor holds: give it a buffered writer.
type Writer struct {
	out  io.Writer
	fw   *flate.Writer
	live bool // fw has had input since it was last reset
	crc  uint32
	size int64
	err  error
}

// NewWriter starts a gzip stream on out. The header is written at once.
func NewWriter(out io.Writer) *Writer {
	z := &Writer{out: out, fw: flateWriters.Get().(*flate.Writer)}
	z.fw.Reset(out)
	_, z.err = out.Write(header)
	return z
}

// Write compresses p into the stream.
func (z *Writer) Write(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	z.crc = crc32.Update(z.crc, crc32.IEEETable, p)
	z.size += int64(len(p))
	z.live = true
	var n int
	n, z.err = z.fw.Write(p)
	return n, z.err
}

// WriteString compresses s into the stream.
func (z *Writer) WriteString(s string) (int, error) {
	// flate.Writer takes []byte only; the strings written live are a
	// list's envelope and separators, small enough to copy.
	return z.Write([]byte(s))
}

// WriteSegment splices s into the stream after what was written before.
func (z *Writer) WriteSegment(s Segment) error {
	if z.err != nil {
		return z.err
	}
	if z.live {
		// End the live part byte-aligned, and start the next one with a
		// fresh dictionary: after s, the decompressor's window holds s's
		// bytes, which the compressor never saw.
		if z.err = z.fw.Flush(); z.err != nil {
			return z.err
		}
		z.fw.Reset(z.out)
		z.live = false
	}
	if _, z.err = z.out.Write(s.Deflate); z.err != nil {
		return z.err
	}
	z.crc = Combine(z.crc, s.CRC, s.Size)
	z.size += s.Size
	return nil
}

// Close ends the DEFLATE data with a final block and writes the gzip
// trailer. It gives back the compressor; the Writer cannot be used
// afterwards.
func (z *Writer) Close() error {
	if z.fw == nil {
		return errors.New("gzsplice: Writer already closed")
	}
	if z.err == nil {
		z.err = z.fw.Close()
	}
	z.fw.Reset(nil)
	flateWriters.Put(z.fw)
	z.fw = nil
	if z.err != nil {
		return z.err
	}
	var t [8]byte
	binary.LittleEndian.PutUint32(t[:4], z.crc)
	binary.LittleEndian.PutUint32(t[4:], uint32(z.size)) // ISIZE is the length mod 2^32
	_, z.err = z.out.Write(t[:])
	return z.err
}
