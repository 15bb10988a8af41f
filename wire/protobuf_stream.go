package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// ReadProtobufList reads an enveloped List kind from r as it arrives: the
// envelope's TypeMeta, the list's ListMeta, and each item's protobuf
// bytes, passed to item in order and valid only during the call (they may
// lie in the reader's buffer: item must copy what it keeps, as generated
// protobuf decoders do). Only one
// item is held at a time, never the whole body: kube-apiserver answers a
// LIST with resourceVersion=0 in one page whatever the limit, 125 MiB for
// 100,000 ConfigMaps. It accepts what DecodeEnvelope and
// DecodeProtobufList accept, but for an envelope holding more than one
// object (a repeated Raw field, whose last occurrence would win), which it
// refuses. An error from item stops the read and is returned as is.
func ReadProtobufList(r io.Reader, item func([]byte) error) (TypeMeta, ListMeta, error) {
	s := &protoStream{r: bufio.NewReaderSize(r, 64<<10), left: -1}
	var (
		tm      TypeMeta
		lm      ListMeta
		env     Envelope
		seenRaw bool
	)
	magic := make([]byte, len(protobufMagic))
	if _, err := io.ReadFull(s.r, magic); err != nil && !isEOF(err) {
		return tm, lm, err
	} else if err != nil || !bytes.Equal(magic, protobufMagic) {
		return tm, lm, fmt.Errorf("%w: no k8s protobuf prefix", ErrProtobuf)
	}
	err := s.eachField(func(f streamField) error {
		switch f.num {
		case unknownTypeMeta:
			b, err := f.bytes()
			if err != nil {
				return err
			}
			return decodeTypeMeta(b, &tm)
		case unknownRaw:
			if f.typ != protowire.BytesType {
				return fmt.Errorf("%w: field %d has wire type %d, want bytes", ErrProtobuf, f.num, f.typ)
			}
			if seenRaw {
				return fmt.Errorf("%w: envelope holds more than one object", ErrProtobuf)
			}
			seenRaw = true
			list, err := f.message()
			if err != nil {
				return err
			}
			lm, err = list.readList(item)
			return err
		case unknownContentEncoding:
			return f.string(&env.ContentEncoding)
		case unknownContentType:
			return f.string(&env.ContentType)
		}
		return f.skip()
	})
	if err != nil {
		return TypeMeta{}, ListMeta{}, err
	}
	if env.ContentEncoding != "" {
		return TypeMeta{}, ListMeta{}, fmt.Errorf("%w: content encoding %q is not supported", ErrProtobuf, env.ContentEncoding)
	}
	if env.ContentType != "" && env.ContentType != ContentTypeProtobuf {
		return TypeMeta{}, ListMeta{}, fmt.Errorf("%w: envelope holds %q, not protobuf", ErrProtobuf, env.ContentType)
	}
	return tm, lm, nil
}

// readList reads a List kind's fields from s, as DecodeProtobufList does.
func (s *protoStream) readList(item func([]byte) error) (ListMeta, error) {
	var lm ListMeta
	err := s.eachField(func(f streamField) error {
		switch f.num {
		case listMetadata, listItems:
			if f.typ != protowire.BytesType {
				return fmt.Errorf("%w: field %d has wire type %d, want bytes", ErrProtobuf, f.num, f.typ)
			}
			b, err := f.bytes()
			if err != nil {
				return err
			}
			if f.num == listMetadata {
				return decodeListMeta(b, &lm)
			}
			return item(b)
		}
		return f.skip()
	})
	return lm, err
}

// protoStream reads protobuf fields from r; left is how many bytes the
// message being read has left (-1: up to the end of r).
type protoStream struct {
	r    *bufio.Reader
	left int64
}

// streamField is a field whose tag has been read and whose value has not.
type streamField struct {
	s   *protoStream
	num protowire.Number
	typ protowire.Type
}

// eachField calls fn for each bytes or varint field of the message s
// reads (fn must read or skip the field's value), and skips the others,
// as eachField does.
func (s *protoStream) eachField(fn func(streamField) error) error {
	for s.left != 0 {
		f, err := s.tag()
		if errors.Is(err, io.EOF) && s.left < 0 {
			return nil
		}
		if err != nil {
			return unexpectedEOF(err)
		}
		if f.typ != protowire.BytesType && f.typ != protowire.VarintType {
			err = f.skip()
		} else {
			err = fn(f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// tag reads a field's tag; io.EOF when nothing at all was left.
func (s *protoStream) tag() (streamField, error) {
	tag, err := s.varint()
	if err != nil {
		return streamField{}, err
	}
	num, typ := protowire.DecodeTag(tag)
	if num < protowire.MinValidNumber {
		return streamField{}, fmt.Errorf("%w: %w", ErrProtobuf, protowire.ParseError(-1))
	}
	return streamField{s: s, num: num, typ: typ}, nil
}

// unexpectedEOF turns a bare io.EOF, met inside a value, into a protobuf
// error.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) && !errors.Is(err, ErrProtobuf) {
		return fmt.Errorf("%w: %w", ErrProtobuf, io.ErrUnexpectedEOF)
	}
	return err
}

// isEOF reports whether err says the reader's data ended.
func isEOF(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }

// cutShort is the error of a read that did not get what a value needs:
// the message ended early (a protobuf error), or the reader failed (a
// cancelled request, a reset connection, corrupt gzip), which is
// returned as it is, so that callers can tell the two apart.
func cutShort(err error) error {
	if isEOF(err) {
		return fmt.Errorf("%w: %w", ErrProtobuf, io.ErrUnexpectedEOF)
	}
	return err
}

// varint reads one varint; io.EOF only when nothing at all was left.
func (s *protoStream) varint() (uint64, error) {
	var v uint64
	for i := 0; ; i++ {
		if s.left == 0 || i == protowire.SizeVarint(1<<63) {
			return 0, fmt.Errorf("%w: bad varint", ErrProtobuf)
		}
		c, err := s.r.ReadByte()
		if err != nil {
			if i == 0 && errors.Is(err, io.EOF) {
				return 0, io.EOF
			}
			return 0, cutShort(err)
		}
		s.take(1)
		if i == 9 && c > 1 {
			return 0, fmt.Errorf("%w: varint overflows 64 bits", ErrProtobuf)
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, nil
		}
	}
}

func (s *protoStream) take(n int64) {
	if s.left > 0 {
		s.left -= n
	}
}

// length reads a length prefix that fits in what s has left.
func (s *protoStream) length() (int64, error) {
	n, err := s.varint()
	if err != nil {
		return 0, unexpectedEOF(err)
	}
	if n > 1<<62 || (s.left >= 0 && int64(n) > s.left) {
		return 0, fmt.Errorf("%w: length %d past the end of its message", ErrProtobuf, n)
	}
	return int64(n), nil
}

// bytes reads a length-delimited value.
func (f streamField) bytes() ([]byte, error) {
	if f.typ != protowire.BytesType {
		return nil, fmt.Errorf("%w: field %d has wire type %d, want bytes", ErrProtobuf, f.num, f.typ)
	}
	n, err := f.s.length()
	if err != nil {
		return nil, err
	}
	b, err := f.s.readBytes(n)
	if err != nil {
		if isEOF(err) {
			return nil, fmt.Errorf("%w: field %d: %w", ErrProtobuf, f.num, io.ErrUnexpectedEOF)
		}
		return nil, err
	}
	f.s.take(n)
	return b, nil
}

// readBytes reads n bytes, valid until s's reader is read again. A value
// that fits the reader's buffer is returned in place: a list item is
// decoded straight from the buffer its bytes arrived in, with no copy and
// no allocation of its own (decoders copy what they keep, as generated
// protobuf code does). A larger one gets a slice of its own (readN).
func (s *protoStream) readBytes(n int64) ([]byte, error) {
	if n > int64(s.r.Size()) {
		return readN(s.r, n)
	}
	b, err := s.r.Peek(int(n))
	if err != nil {
		return nil, err
	}
	// Discarding what was peeked only moves the read index: the bytes
	// stay where they are until the next read fills the buffer again.
	_, _ = s.r.Discard(int(n))
	return b, nil
}

// readChunk bounds what readN allocates ahead of the bytes that arrive.
const readChunk = 1 << 20

// readN reads n bytes into a new slice. Up to readChunk it allocates
// them at once; beyond, a chunk at a time as they arrive, so that a
// forged length allocates little more than was sent.
func readN(r io.Reader, n int64) ([]byte, error) {
	if n <= readChunk {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, err
	}
	var b []byte
	for int64(len(b)) < n {
		m := int(min(n-int64(len(b)), readChunk))
		b = slices.Grow(b, m)
		k, err := io.ReadFull(r, b[len(b):len(b)+m])
		b = b[:len(b)+k]
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (f streamField) string(dst *string) error {
	b, err := f.bytes()
	if err != nil {
		return err
	}
	*dst = string(b)
	return nil
}

// message returns a stream over a length-delimited value, which must be
// read to its end before s is read again.
func (f streamField) message() (*protoStream, error) {
	n, err := f.s.length()
	if err != nil {
		return nil, err
	}
	f.s.take(n)
	return &protoStream{r: f.s.r, left: n}, nil
}

// skip reads past the field's value; a group is skipped whole, up to the
// end-group tag that closes it, as skipGroup does.
func (f streamField) skip() error {
	s := f.s
	switch f.typ {
	case protowire.VarintType:
		_, err := s.varint()
		return unexpectedEOF(err)
	case protowire.Fixed32Type:
		return s.discard(4)
	case protowire.Fixed64Type:
		return s.discard(8)
	case protowire.BytesType:
		n, err := s.length()
		if err != nil {
			return err
		}
		return s.discard(n)
	case protowire.StartGroupType:
		// Nested groups are counted, not recursed into: a server's
		// millions of group starts must not grow the stack without
		// bound (as skipGroup).
		for depth := 1; depth > 0; {
			g, err := s.tag()
			if err != nil {
				return unexpectedEOF(err)
			}
			switch g.typ {
			case protowire.StartGroupType:
				depth++
			case protowire.EndGroupType:
				depth--
			default:
				if err := g.skip(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return fmt.Errorf("%w: field %d has wire type %d", ErrProtobuf, f.num, f.typ)
}

func (s *protoStream) discard(n int64) error {
	if s.left >= 0 && n > s.left {
		return fmt.Errorf("%w: %w", ErrProtobuf, io.ErrUnexpectedEOF)
	}
	if _, err := io.CopyN(io.Discard, s.r, n); err != nil {
		return cutShort(err)
	}
	s.take(n)
	return nil
}
