package media

import (
	"image"
	"math"
	"runtime"
	"sync"

	"github.com/disintegration/imaging"
)

// This file resizes and orients images made of 8-bit planes (YCbCr and
// Gray, which is what JPEG and lossy WebP decode to) directly, without
// converting them to RGBA. Y'CbCr is an affine function of R'G'B', so
// filtering the planes gives the same result as filtering RGB, at a third
// of the work for 4:2:0 images, and the JPEG encoder reads *image.YCbCr
// without conversion. Weights are 14-bit fixed point.

// plane is one 8-bit channel.
type plane struct {
	pix    []byte
	stride int
	w, h   int
}

func newPlane(w, h int) plane {
	return plane{pix: make([]byte, w*h), stride: w, w: w, h: h}
}

const weightBits = 14

// taps holds, for each destination index, the first source index and the
// fixed-point weights of the contiguous source range it reads.
type taps struct {
	start []int
	w     [][]int32
}

// makeTaps computes the resampling weights mapping a source of length src to
// one of length dst with filter f, widening the kernel by the scale factor
// when downscaling, so it also acts as the anti-aliasing low-pass filter.
// Each row of weights sums exactly to 1<<weightBits.
func makeTaps(dst, src int, f imaging.ResampleFilter) taps {
	scale := float64(src) / float64(dst)
	support := f.Support * max(scale, 1)
	maxN := int(math.Ceil(support))*2 + 2
	t := taps{start: make([]int, dst), w: make([][]int32, dst)}
	flat := make([]int32, 0, dst*maxN)
	fw := make([]float64, 0, maxN)
	for i := 0; i < dst; i++ {
		center := (float64(i)+0.5)*scale - 0.5
		begin := max(int(math.Ceil(center-support)), 0)
		end := min(int(math.Floor(center+support)), src-1)
		fw = fw[:0]
		var sum float64
		for u := begin; u <= end; u++ {
			k := f.Kernel((float64(u) - center) / max(scale, 1))
			fw = append(fw, k)
			sum += k
		}
		if sum == 0 { // Cannot happen with the filters used; be safe anyway.
			fw[0], sum = 1, 1
		}
		row := flat[len(flat) : len(flat)+len(fw)]
		flat = flat[:len(flat)+len(fw)]
		var total int32
		big := 0
		for j, k := range fw {
			row[j] = int32(math.Round(k / sum * (1 << weightBits)))
			total += row[j]
			if row[j] > row[big] {
				big = j
			}
		}
		row[big] += 1<<weightBits - total // Make the weights sum exactly to one.
		t.start[i], t.w[i] = begin, row
	}
	return t
}

// clamp8 converts a fixed-point accumulator (with the rounding term already
// added) to a byte.
func clamp8(v int32) byte {
	v >>= weightBits
	if uint32(v) > 255 {
		if v < 0 {
			return 0
		}
		return 255
	}
	return byte(v)
}

// parallelRows calls fn on disjoint ranges of [0, n) from up to GOMAXPROCS
// goroutines; small jobs (under minWork bytes of output) run on the caller's.
func parallelRows(n, work int, fn func(lo, hi int)) {
	const minWork = 64 << 10
	procs := runtime.GOMAXPROCS(0)
	if procs <= 1 || work < minWork || n < 2 {
		fn(0, n)
		return
	}
	procs = min(procs, n)
	var wg sync.WaitGroup
	for p := 0; p < procs; p++ {
		lo, hi := n*p/procs, n*(p+1)/procs
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// resizePlane resamples src to w×h with filter f: horizontally into a
// temporary plane, then vertically. It always returns a new plane.
func resizePlane(src plane, w, h int, f imaging.ResampleFilter) plane {
	if w == src.w && h == src.h {
		return copyPlane(src)
	}
	tmp := src
	if w != src.w {
		tmp = newPlane(w, src.h)
		tx := makeTaps(w, src.w, f)
		parallelRows(src.h, w*src.h, func(lo, hi int) {
			for y := lo; y < hi; y++ {
				s := src.pix[y*src.stride : y*src.stride+src.w]
				d := tmp.pix[y*tmp.stride : y*tmp.stride+w]
				for x := range d {
					ws := tx.w[x]
					s := s[tx.start[x] : tx.start[x]+len(ws)]
					acc := int32(1 << (weightBits - 1))
					for k, wt := range ws {
						acc += wt * int32(s[k])
					}
					d[x] = clamp8(acc)
				}
			}
		})
	}
	if h == tmp.h {
		return tmp
	}
	dst := newPlane(w, h)
	ty := makeTaps(h, tmp.h, f)
	parallelRows(h, w*h, func(lo, hi int) {
		acc := make([]int32, w)
		for y := lo; y < hi; y++ {
			for x := range acc {
				acc[x] = 1 << (weightBits - 1)
			}
			for k, wt := range ty.w[y] {
				r := ty.start[y] + k
				s := tmp.pix[r*tmp.stride : r*tmp.stride+w]
				s = s[:len(acc)]
				for x, v := range s {
					acc[x] += wt * int32(v)
				}
			}
			d := dst.pix[y*dst.stride : y*dst.stride+w]
			for x, v := range acc[:len(d)] {
				d[x] = clamp8(v)
			}
		}
	})
	return dst
}

// copyPlane returns a compact copy of p.
func copyPlane(p plane) plane {
	d := newPlane(p.w, p.h)
	for y := 0; y < p.h; y++ {
		copy(d.pix[y*d.w:(y+1)*d.w], p.pix[y*p.stride:y*p.stride+p.w])
	}
	return d
}

// orientPlane returns p transformed by EXIF orientation o (2 to 8) into a
// new plane.
func orientPlane(p plane, o int) plane {
	w, h := p.w, p.h
	if o >= 5 {
		w, h = h, w
	}
	d := newPlane(w, h)
	// For each source pixel (x, y), the destination is (dx, dy) = base +
	// x*ax + y*ay, in destination coordinates.
	var bx, by, axx, axy, ayx, ayy int
	switch o {
	case 2: // Mirror horizontally.
		bx, axx, ayy = p.w-1, -1, 1
	case 3: // Rotate 180°.
		bx, by, axx, ayy = p.w-1, p.h-1, -1, -1
	case 4: // Mirror vertically.
		by, axx, ayy = p.h-1, 1, -1
	case 5: // Transpose.
		axy, ayx = 1, 1
	case 6: // Rotate 90° clockwise.
		bx, axy, ayx = p.h-1, 1, -1
	case 7: // Transverse.
		bx, by, axy, ayx = p.h-1, p.w-1, -1, -1
	case 8: // Rotate 90° counter-clockwise.
		by, axy, ayx = p.w-1, -1, 1
	default:
		return copyPlane(p)
	}
	// Destination offset = (by + x*axy + y*ayy)*w + bx + x*axx + y*ayx.
	stepX := axy*w + axx
	stepY := ayy*w + ayx
	parallelRows(p.h, p.w*p.h, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			off := by*w + bx + y*stepY
			for _, v := range p.pix[y*p.stride : y*p.stride+p.w] {
				d.pix[off] = v
				off += stepX
			}
		}
	})
	return d
}

// ycbcrPlanes returns the three planes of m.
func ycbcrPlanes(m *image.YCbCr) (y, cb, cr plane) {
	r := m.Rect
	y = plane{pix: m.Y[m.YOffset(r.Min.X, r.Min.Y):], stride: m.YStride, w: r.Dx(), h: r.Dy()}
	c0 := m.COffset(r.Min.X, r.Min.Y)
	c1 := m.COffset(r.Max.X-1, r.Max.Y-1)
	cw := (c1-c0)%m.CStride + 1
	ch := (c1-c0)/m.CStride + 1
	cb = plane{pix: m.Cb[c0:], stride: m.CStride, w: cw, h: ch}
	cr = plane{pix: m.Cr[c0:], stride: m.CStride, w: cw, h: ch}
	return y, cb, cr
}

// newYCbCr420 assembles a 4:2:0 image from its planes.
func newYCbCr420(y, cb, cr plane) *image.YCbCr {
	return &image.YCbCr{
		Y: y.pix, Cb: cb.pix, Cr: cr.pix,
		YStride: y.stride, CStride: cb.stride,
		SubsampleRatio: image.YCbCrSubsampleRatio420,
		Rect:           image.Rect(0, 0, y.w, y.h),
	}
}

// resizeYCbCr resamples m (any subsampling) to a w×h 4:2:0 image. Chroma
// planes are resampled straight to the output's chroma size.
func resizeYCbCr(m *image.YCbCr, w, h int, f imaging.ResampleFilter) *image.YCbCr {
	y, cb, cr := ycbcrPlanes(m)
	cw, ch := (w+1)/2, (h+1)/2
	var ny, ncb, ncr plane
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // The chroma planes are small: resize them alongside Y.
		defer wg.Done()
		ncb = resizePlane(cb, cw, ch, f)
		ncr = resizePlane(cr, cw, ch, f)
	}()
	ny = resizePlane(y, w, h, f)
	wg.Wait()
	return newYCbCr420(ny, ncb, ncr)
}

// orientYCbCr applies orientation o to a 4:2:0 image.
func orientYCbCr(m *image.YCbCr, o int) *image.YCbCr {
	y, cb, cr := ycbcrPlanes(m)
	return newYCbCr420(orientPlane(y, o), orientPlane(cb, o), orientPlane(cr, o))
}

// grayPlane returns the plane of m.
func grayPlane(m *image.Gray) plane {
	r := m.Rect
	return plane{pix: m.Pix[m.PixOffset(r.Min.X, r.Min.Y):], stride: m.Stride, w: r.Dx(), h: r.Dy()}
}

func newGray(p plane) *image.Gray {
	return &image.Gray{Pix: p.pix, Stride: p.stride, Rect: image.Rect(0, 0, p.w, p.h)}
}

// shrinkShift returns log2 of the largest power-of-two reduction, at most 8,
// that still leaves the longest side of a w×h image at least need pixels
// long. need 0 means no reduction.
func shrinkShift(w, h, need int) uint {
	if need <= 0 {
		return 0
	}
	longest := max(w, h)
	shift := uint(0)
	for shift < 3 && (longest+(2<<shift)-1)>>(shift+1) >= need {
		shift++
	}
	return shift
}

// shrinkPlane returns a new plane of ⌈w/2^s⌉×⌈h/2^s⌉ whose every pixel is
// the rounded mean of one 2^s×2^s block of p (a box filter). Blocks cut off
// by the right or bottom edge average the pixels they have.
func shrinkPlane(p plane, s uint) plane {
	f := 1 << s
	d := newPlane((p.w+f-1)>>s, (p.h+f-1)>>s)
	parallelRows(d.h, p.w*p.h, func(lo, hi int) {
		acc := make([]uint32, d.w)
		for y := lo; y < hi; y++ {
			clear(acc)
			y0, y1 := y<<s, min((y+1)<<s, p.h)
			for sy := y0; sy < y1; sy++ {
				for x, v := range p.pix[sy*p.stride : sy*p.stride+p.w] {
					acc[x>>s] += uint32(v)
				}
			}
			rows := uint32(y1 - y0)
			out := d.pix[y*d.stride : y*d.stride+d.w]
			for x, sum := range acc {
				n := rows * uint32(min(f, p.w-x<<s))
				out[x] = byte((sum + n/2) / n)
			}
		}
	})
	return d
}

// shrink reduces a Y'CbCr or Gray image by 2^s on each side with
// shrinkPlane, keeping its chroma subsampling; other images, and s 0, are
// returned as they are. Each chroma plane of the result still has the size
// the subsampling implies (⌈⌈n/r⌉/2^s⌉ = ⌈⌈n/2^s⌉/r⌉ for a ratio r).
func shrink(img image.Image, s uint) image.Image {
	if s == 0 {
		return img
	}
	switch m := img.(type) {
	case *image.YCbCr:
		y, cb, cr := ycbcrPlanes(m)
		ny, ncb, ncr := shrinkPlane(y, s), shrinkPlane(cb, s), shrinkPlane(cr, s)
		return &image.YCbCr{
			Y: ny.pix, Cb: ncb.pix, Cr: ncr.pix,
			YStride: ny.stride, CStride: ncb.stride,
			SubsampleRatio: m.SubsampleRatio,
			Rect:           image.Rect(0, 0, ny.w, ny.h),
		}
	case *image.Gray:
		return newGray(shrinkPlane(grayPlane(m), s))
	}
	return img
}
