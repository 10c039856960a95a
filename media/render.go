package media

import (
	"image"
	"sync"

	"github.com/disintegration/imaging"
)

// filters holds the resampling filter for each entry of Sizes, by index.
// See the package documentation for why these were chosen.
var filters = []imaging.ResampleFilter{
	imaging.Lanczos,    // small, made from medium
	imaging.CatmullRom, // medium, made from large
	imaging.Lanczos,    // large, made from the decoded image
}

// orient applies EXIF orientation o (1 to 8) to img. Orientation 1 returns
// img itself. YCbCr and Gray images stay in their planar form.
func orient(img image.Image, o int) image.Image {
	if o < 2 || o > 8 {
		return img
	}
	switch m := img.(type) {
	case *image.YCbCr:
		if m.SubsampleRatio != image.YCbCrSubsampleRatio420 {
			w, h := dims(m)
			m = resizeYCbCr(m, w, h, imaging.Lanczos)
		}
		return orientYCbCr(m, o)
	case *image.Gray:
		return newGray(orientPlane(grayPlane(m), o))
	}
	switch o {
	case 2:
		return imaging.FlipH(img)
	case 3:
		return imaging.Rotate180(img)
	case 4:
		return imaging.FlipV(img)
	case 5:
		return imaging.Transpose(img)
	case 6:
		return imaging.Rotate270(img) // 90° clockwise.
	case 7:
		return imaging.Transverse(img)
	default: // 8
		return imaging.Rotate90(img) // 90° counter-clockwise.
	}
}

// resize scales img to exactly w×h with filter f, returning img itself when
// it already has that size. YCbCr images come out as 4:2:0 and Gray images
// as Gray, resampled plane by plane; all others as NRGBA.
func resize(img image.Image, w, h int, f imaging.ResampleFilter) image.Image {
	iw, ih := dims(img)
	same := iw == w && ih == h
	switch m := img.(type) {
	case *image.YCbCr:
		if same && m.SubsampleRatio == image.YCbCrSubsampleRatio420 {
			return m
		}
		return resizeYCbCr(m, w, h, f)
	case *image.Gray:
		if same {
			return m
		}
		return newGray(resizePlane(grayPlane(m), w, h, f))
	}
	if same {
		return img
	}
	return imaging.Resize(img, w, h, f)
}

// isOpaque reports whether every pixel of img is fully opaque.
func isOpaque(img image.Image) bool {
	if o, ok := img.(interface{ Opaque() bool }); ok {
		return o.Opaque()
	}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if _, _, _, a := img.At(x, y).RGBA(); a != 0xFFFF {
				return false
			}
		}
	}
	return true
}

// render makes the renditions of src, the decoded image (possibly reduced
// in size by the decoder) whose original stored dimensions are w×h and whose
// EXIF orientation is o. Each size is made from the next larger one, and each
// rendition is encoded in its own goroutine while the next smaller one is
// being resized.
func render(src image.Image, w, h, o int, mime string, opt Options) (*Result, error) {
	opaque := isOpaque(src)
	ow, oh := w, h // Oriented dimensions.
	if o >= 5 {
		ow, oh = h, w
	}
	n := len(Sizes)
	if opt.KeepFull {
		n++
	}
	res := &Result{SourceMIME: mime, Width: ow, Height: oh, Renditions: make([]Rendition, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	emit := func(i int, name string, img image.Image) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, ct, err := encode(img, opaque, opt.JPEGQuality)
			iw, ih := dims(img)
			res.Renditions[i] = Rendition{Name: name, ContentType: ct, Width: iw, Height: ih, Data: data}
			errs[i] = err
		}()
	}

	cur, oriented := src, false
	if opt.KeepFull {
		cur, oriented = orient(src, o), true
		emit(n-1, FullName, cur)
	}
	for i := len(Sizes) - 1; i >= 0; i-- {
		tw, th := fit(ow, oh, Sizes[i].Max)
		if oriented {
			cur = resize(cur, tw, th, filters[i])
		} else {
			// Resize in the stored orientation, then orient the smaller image.
			if o >= 5 {
				cur = resize(cur, th, tw, filters[i])
			} else {
				cur = resize(cur, tw, th, filters[i])
			}
			cur, oriented = orient(cur, o), true
		}
		emit(i, Sizes[i].Name, cur)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}
