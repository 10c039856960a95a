// Package media turns uploaded images into the renditions the chat API
// serves. It is a set of pure functions over bytes: it knows nothing of
// stores or HTTP, and it is safe for concurrent use.
//
// # What it does
//
// [Process] (or [ProcessBytes]) reads one JPEG, PNG, GIF or WebP image and
// returns three renditions, small, medium and large, which fit within 160,
// 600 and 1500 pixels on their longest side (see [Sizes]), plus "full" at the
// original dimensions when [Options.KeepFull] is set. An image is never
// enlarged: when it is smaller than a size, that rendition has the original
// dimensions. Only the first frame of an animated GIF is used; a first frame
// that covers only part of the GIF's screen is placed on a transparent
// canvas of the screen's size. Animated WebP is not supported.
//
// Every rendition is oriented according to the image's EXIF Orientation tag
// (all eight values), read from a JPEG's APP1 Exif segment, a PNG's eXIf
// chunk or a WebP's EXIF chunk, so a portrait photo that a phone stored
// sideways comes out upright; [Result.Width] and [Result.Height] are the
// oriented dimensions.
//
// # Output format and metadata
//
// Renditions are baseline JPEG with 4:2:0 chroma subsampling at quality 85
// by default ([Options.JPEGQuality]), a common choice for photographs on
// the web whose artefacts are hard to see at normal viewing size. If any pixel of the image is not fully opaque, every rendition
// is PNG instead, so transparency survives. Grayscale JPEGs stay grayscale.
// Because every rendition is re-encoded from pixels, nothing else of the
// input survives: no EXIF (including GPS position), XMP, IPTC, comments or
// text chunks. Embedded ICC colour profiles are dropped too, so the pixels
// are interpreted as sRGB; a photo tagged with a wide-gamut profile (such as
// Display P3) looks slightly less saturated than in a colour-managed viewer.
//
// # Limits
//
// Input is bounded twice. [Options.MaxBytes] (50 MiB by default) bounds the
// bytes read. [Options.MaxPixels] (50 million by default) bounds width ×
// height, and it is enforced from the image header, before any pixel is
// decoded or any pixel buffer allocated: a 100-byte file claiming
// 100000×100000 pixels is refused in microseconds. Both limits fail with
// [ErrTooLarge]; input that is not a decodable JPEG, PNG, GIF or WebP,
// including truncated or corrupt files, fails with [ErrNotImage]. HTTP
// handlers map them to 413 and 415.
//
// Memory use follows from the pixel limit: decoding needs about 1.5 bytes
// per pixel for JPEG (4 for a PNG, more for 16-bit PNGs), except that a
// large JPEG is decoded at reduced size (see below). A 12-megapixel photo
// is processed in about 24 MiB of peak resident memory.
//
// # Resizing and filters
//
// Each rendition is made from the next larger one: large from the decoded
// image, medium from large and small from medium, so the costly filtering
// of the full image happens once.
//
// A JPEG much larger than 1500 pixels is decoded at 1/2, 1/4 or 1/8 of its
// size, the largest reduction that still leaves at least 1500 pixels on the
// longest side ("shrink on load", as libvips and libjpeg do). The reduction
// happens in the DCT domain while decoding, with a reduced-size inverse DCT
// that keeps only the block's low frequencies, so it costs less than a full
// decode and needs a quarter of the memory or less. This uses a copy of the
// standard library's JPEG decoder extended for scaled decoding
// (internal/jpeg). When the full rendition is requested the image is decoded
// at full size.
//
// The filters are chosen per size:
//
//   - large: Lanczos (3 lobes) from the decoded image. This is the biggest
//     rendition, most likely to be viewed at 1:1, and Lanczos keeps fine
//     detail sharp without visible ringing. After shrink on load it usually
//     scales by less than 2, so it stays cheap. Measured against a Lanczos
//     resize of the full-size decode, the shrink-on-load path measured
//     about 46 dB PSNR, a smaller change than encoding the rendition at
//     quality 85 makes (about 42 dB).
//   - medium: Catmull-Rom (bicubic) from large. At a factor of 2.5 it
//     matched Lanczos within 0.1 dB in our measurements, at two thirds of
//     the cost.
//   - small: Lanczos from medium. Thumbnails are where softness shows most;
//     Lanczos measured 1.5 dB closer to the reference than Catmull-Rom, and
//     the image is tiny, so the cost does not matter.
//
// Filters widen with the scale factor, so they also act as the anti-aliasing
// low-pass filter. Filtering happens on the gamma-encoded values, as in most
// image tools.
//
// # Performance
//
// JPEG and lossy WebP images decode to Y'CbCr planes, and they are resized
// and rotated as planes, without conversion to RGBA: Y'CbCr is an affine
// function of R'G'B', so filtering the planes equals filtering RGB, while a
// 4:2:0 image has half the samples of RGB and the JPEG encoder reads Y'CbCr
// directly. Filters use 14-bit fixed-point weights. Orientation is applied
// to the large rendition after resizing, the smallest point at which it can
// be. Resizes split their rows over all cores, and each rendition is encoded
// in its own goroutine while the next smaller one is being made, so both
// cores of a small server are busy. Encoding buffers are recycled through
// sync.Pool. Other images (PNG, GIF, lossless WebP and any image with
// transparency) are resized by github.com/disintegration/imaging in NRGBA
// with alpha-weighted filtering.
//
// On a two-core machine a 4000×3000 photo JPEG yields its three renditions
// in about 0.19 s with a peak resident set of 23,880 KiB, against 0.34 s
// and 54,004 KiB for three runs of libvips' vipsthumbnail; docs/benchmarks.md
// has the measurements and media/bench.sh reproduces them. Progressive JPEGs
// are several times slower to decode than baseline ones and need memory for
// all their DCT coefficients (2 bytes per coefficient).
package media
