package gzsplice

import "hash/crc32"

// CRC-32 (IEEE) arithmetic over GF(2), in the reflected bit order that
// hash/crc32 and gzip use: bit 31 of a word is the coefficient of x^0,
// bit 0 that of x^31.

// poly is the IEEE polynomial, reflected, without its x^32 term.
const poly = crc32.IEEE

// mulMod returns a·b mod poly.
func mulMod(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		// b ·= x: shift towards the high powers, reducing by poly when
		// the x^31 coefficient (bit 0) carries out.
		b = b>>1 ^ poly&-(b&1)
	}
	return p
}

// xPow2 holds x^(2^k) mod poly for k = 0..66: enough for x^(8n) with any
// non-negative int64 n.
var xPow2 = func() (t [67]uint32) {
	t[0] = 1 << 30 // x^1
	for k := 1; k < len(t); k++ {
		t[k] = mulMod(t[k-1], t[k-1])
	}
	return t
}()

// xPow8n returns x^(8n) mod poly: the factor that appending n bytes
// applies to a CRC.
func xPow8n(n int64) uint32 {
	r := uint32(1) << 31 // x^0
	for k := 3; n != 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			r = mulMod(xPow2[k], r)
		}
	}
	return r
}

// Combine returns the CRC-32 (IEEE) of a followed by b, given the CRC of
// a, the CRC of b and b's length, without reading either: CRC-32 is
// linear, so crc(a‖b) = crc(a)·x^(8·len(b)) ⊕ crc(b) (mod poly), the
// pre- and post-inversion cancelling out. It costs O(log len(b)).
func Combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	return mulMod(xPow8n(lenB), crcA) ^ crcB
}
