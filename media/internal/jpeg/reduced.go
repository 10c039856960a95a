// This file is not part of the upstream image/jpeg package.

package jpeg

import "math"

// Reduced-size inverse DCTs, as in libjpeg's scaled decoding. The 8-point
// JPEG IDCT reconstructs a continuous, band-limited signal
//
//	f(x) = 1/2 Σ_u C(u) F(u) cos((2x+1)uπ/16),  C(0) = 1/√2, C(u>0) = 1.
//
// Keeping only the lowest 8/n frequencies and sampling f at the centres of
// groups of n pixels (x = n·x' + (n-1)/2) gives an 8/n-point transform whose
// basis is cos((2x'+1)uπ/(16/n)). That is an ideal low-pass filter followed by
// decimation within each block: a better downscale than averaging the full
// IDCT's pixels, and much cheaper, since only 16 (n = 2) or 4 (n = 4) of the
// 64 coefficients are dequantised and transformed.

// kBits is the fixed-point precision of the reduced IDCT constants.
const kBits = 14

var (
	// k4[x][u] and k2[x][u] are 1/2·C(u)·cos((2x+1)uπ/8) and
	// 1/2·C(u)·cos((2x+1)uπ/4) in Q14.
	k4 [4][4]int
	k2 [2][2]int
	// zigOf maps a natural-order coefficient index to its zig-zag index,
	// the order quantisation tables are stored in.
	zigOf [blockSize]int
)

func init() {
	cu := func(u int) float64 {
		if u == 0 {
			return 1 / math.Sqrt2
		}
		return 1
	}
	for x := range 4 {
		for u := range 4 {
			k4[x][u] = int(math.Round(0.5 * cu(u) * math.Cos(float64((2*x+1)*u)*math.Pi/8) * (1 << kBits)))
		}
	}
	for x := range 2 {
		for u := range 2 {
			k2[x][u] = int(math.Round(0.5 * cu(u) * math.Cos(float64((2*x+1)*u)*math.Pi/4) * (1 << kBits)))
		}
	}
	for zig, nat := range unzig {
		zigOf[nat] = zig
	}
}

// reducedIDCT dequantises the low-frequency coefficients of b (natural order;
// qt in zig-zag order) and writes the (8>>shift)x(8>>shift) reduced block,
// level-shifted and clipped, to dst. shift must be 1 or 2.
func reducedIDCT(b *block, qt *block, shift uint, dst []byte, stride int) {
	const round = 1 << (2*kBits - 1)
	if shift == 2 {
		f00 := int(b[0] * qt[0])
		f01 := int(b[1] * qt[zigOf[1]])
		f10 := int(b[8] * qt[zigOf[8]])
		f11 := int(b[9] * qt[zigOf[9]])
		for y := range 2 {
			// Column pass folded in: row v's contribution weighted by k2[y][v].
			r0 := k2[y][0]*f00 + k2[y][1]*f10
			r1 := k2[y][0]*f01 + k2[y][1]*f11
			for x := range 2 {
				v := (k2[x][0]*r0 + k2[x][1]*r1 + round) >> (2 * kBits)
				dst[y*stride+x] = clampLevel(int32(v))
			}
		}
		return
	}
	// shift == 1: 4x4 output from the 4x4 lowest frequencies.
	var t [4][4]int // t[v][x]: row v transformed horizontally, Q14.
	for v := range 4 {
		f0 := int(b[v*8+0] * qt[zigOf[v*8+0]])
		f1 := int(b[v*8+1] * qt[zigOf[v*8+1]])
		f2 := int(b[v*8+2] * qt[zigOf[v*8+2]])
		f3 := int(b[v*8+3] * qt[zigOf[v*8+3]])
		if f1|f2|f3 == 0 {
			dc := f0 * k4[0][0]
			t[v] = [4]int{dc, dc, dc, dc}
			continue
		}
		for x := range 4 {
			t[v][x] = k4[x][0]*f0 + k4[x][1]*f1 + k4[x][2]*f2 + k4[x][3]*f3
		}
	}
	for y := range 4 {
		row := dst[y*stride : y*stride+4]
		ky := &k4[y]
		for x := range 4 {
			v := (ky[0]*t[0][x] + ky[1]*t[1][x] + ky[2]*t[2][x] + ky[3]*t[3][x] + round) >> (2 * kBits)
			row[x] = clampLevel(int32(v))
		}
	}
}
