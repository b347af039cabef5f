//! Painting over what a screenshot must not show: boxes in page CSS pixels, filled
//! black in the decoded image, which is then encoded again as it came. The page never
//! sees this happen, so it cannot undo it (a box drawn into the page's DOM, as masks
//! once were, can be removed by the page's own mutation observer before the capture).

use std::io::Cursor;

use crate::error::{Error, Result};

/// A rectangle in CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rect {
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) w: f64,
    pub(crate) h: f64,
}

/// How far past each box the paint reaches, in CSS pixels: glyphs overhang their line
/// box (descenders, italics), and a JPEG's blocks bleed.
const MARGIN: f64 = 3.0;

/// `image` (a PNG or JPEG of `region`, in page CSS pixels) with every box painted
/// black. The scale from CSS to image pixels is the image's size over the region's.
pub(crate) fn paint(
    image: &[u8],
    jpeg_quality: Option<u8>,
    region: Rect,
    boxes: &[Rect],
) -> Result<Vec<u8>> {
    let mut decoded = match jpeg_quality {
        Some(_) => decode_jpeg(image)?,
        None => decode_png(image)?,
    };
    let sx = f64::from(decoded.width) / region.w.max(1.0);
    let sy = f64::from(decoded.height) / region.h.max(1.0);
    for b in boxes {
        let left = ((b.x - MARGIN - region.x) * sx).floor().max(0.0);
        let top = ((b.y - MARGIN - region.y) * sy).floor().max(0.0);
        let right = ((b.x + b.w + MARGIN - region.x) * sx)
            .ceil()
            .min(f64::from(decoded.width));
        let bottom = ((b.y + b.h + MARGIN - region.y) * sy)
            .ceil()
            .min(f64::from(decoded.height));
        if right <= left || bottom <= top {
            continue;
        }
        decoded.fill(left as u32, top as u32, right as u32, bottom as u32);
    }
    match jpeg_quality {
        Some(quality) => decoded.encode_jpeg(quality),
        None => decoded.encode_png(),
    }
}

/// Decoded pixels: 8-bit channels, `channels` of them a pixel (3: RGB, 4: RGBA).
struct Pixels {
    width: u32,
    height: u32,
    channels: usize,
    data: Vec<u8>,
}

impl Pixels {
    fn fill(&mut self, left: u32, top: u32, right: u32, bottom: u32) {
        let stride = self.width as usize * self.channels;
        for y in top..bottom {
            let row = y as usize * stride;
            for x in left..right {
                let at = row + x as usize * self.channels;
                let Some(pixel) = self.data.get_mut(at..at + self.channels) else {
                    continue;
                };
                pixel[..3].fill(0);
                if self.channels == 4 {
                    pixel[3] = 255;
                }
            }
        }
    }

    fn encode_png(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, self.width, self.height);
        encoder.set_color(if self.channels == 4 {
            png::ColorType::Rgba
        } else {
            png::ColorType::Rgb
        });
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(codec)?;
        writer.write_image_data(&self.data).map_err(codec)?;
        writer.finish().map_err(codec)?;
        Ok(out)
    }

    fn encode_jpeg(&self, quality: u8) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let (width, height) = (dimension(self.width)?, dimension(self.height)?);
        let color = if self.channels == 4 {
            jpeg_encoder::ColorType::Rgba
        } else {
            jpeg_encoder::ColorType::Rgb
        };
        jpeg_encoder::Encoder::new(&mut out, quality)
            .encode(&self.data, width, height, color)
            .map_err(codec)?;
        Ok(out)
    }
}

fn decode_png(image: &[u8]) -> Result<Pixels> {
    let mut decoder = png::Decoder::new(Cursor::new(image));
    // Palette and 16-bit images become 8-bit RGB(A); grey becomes RGB below.
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(codec)?;
    let mut data = vec![
        0;
        reader
            .output_buffer_size()
            .ok_or_else(|| codec("too large"))?
    ];
    let info = reader.next_frame(&mut data).map_err(codec)?;
    data.truncate(info.buffer_size());
    let (width, height) = (info.width, info.height);
    let data = match info.color_type {
        png::ColorType::Rgb => {
            return Ok(Pixels {
                width,
                height,
                channels: 3,
                data,
            });
        }
        png::ColorType::Rgba => {
            return Ok(Pixels {
                width,
                height,
                channels: 4,
                data,
            });
        }
        png::ColorType::Grayscale => data.iter().flat_map(|g| [*g, *g, *g]).collect(),
        png::ColorType::GrayscaleAlpha => data
            .chunks_exact(2)
            .flat_map(|ga| [ga[0], ga[0], ga[0], ga[1]])
            .collect::<Vec<u8>>(),
        png::ColorType::Indexed => return Err(codec("an unexpanded palette")),
    };
    let channels = if info.color_type == png::ColorType::Grayscale {
        3
    } else {
        4
    };
    Ok(Pixels {
        width,
        height,
        channels,
        data,
    })
}

fn decode_jpeg(image: &[u8]) -> Result<Pixels> {
    let mut decoder = jpeg_decoder::Decoder::new(Cursor::new(image));
    let data = decoder.decode().map_err(codec)?;
    let info = decoder
        .info()
        .ok_or_else(|| codec("no image information"))?;
    let data = match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => data,
        jpeg_decoder::PixelFormat::L8 => data.iter().flat_map(|g| [*g, *g, *g]).collect(),
        other => return Err(codec(format!("pixel format {other:?}"))),
    };
    Ok(Pixels {
        width: u32::from(info.width),
        height: u32::from(info.height),
        channels: 3,
        data,
    })
}

fn dimension(n: u32) -> Result<u16> {
    u16::try_from(n).map_err(|_| codec("an image over 65535 pixels a side"))
}

// An image Airlock cannot repaint is not handed out at all.
fn codec(e: impl std::fmt::Display) -> Error {
    Error::Protocol(format!("the screenshot could not be painted over: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn white_png(w: u32, h: u32) -> Vec<u8> {
        Pixels {
            width: w,
            height: h,
            channels: 3,
            data: vec![255; (w * h * 3) as usize],
        }
        .encode_png()
        .unwrap()
    }

    #[test]
    fn a_box_is_painted_at_the_image_scale_and_nothing_else() {
        // A 20×10 CSS region shown at 2 device pixels a CSS pixel.
        let image = white_png(40, 20);
        let region = Rect {
            x: 100.0,
            y: 50.0,
            w: 20.0,
            h: 10.0,
        };
        let boxes = [Rect {
            x: 108.0,
            y: 54.0,
            w: 2.0,
            h: 1.0,
        }];
        let painted = decode_png(&paint(&image, None, region, &boxes).unwrap()).unwrap();
        let at = |x: u32, y: u32| painted.data[((y * 40 + x) * 3) as usize];
        // The box and its margin, in image pixels: x 10..26, y 2..16.
        assert_eq!(at(10, 2), 0);
        assert_eq!(at(25, 15), 0);
        assert_eq!(at(9, 2), 255);
        assert_eq!(at(26, 15), 255);
        assert_eq!(at(10, 16), 255);
        // A box off the image changes nothing; JPEG round-trips too.
        let off = [Rect {
            x: 0.0,
            y: 0.0,
            w: 5.0,
            h: 5.0,
        }];
        let same = decode_png(&paint(&image, None, region, &off).unwrap()).unwrap();
        assert!(same.data.iter().all(|v| *v == 255));
        let jpeg = Pixels {
            width: 40,
            height: 20,
            channels: 3,
            data: vec![255; 2400],
        }
        .encode_jpeg(90)
        .unwrap();
        let painted = decode_jpeg(&paint(&jpeg, Some(90), region, &boxes).unwrap()).unwrap();
        assert!(painted.data[((8 * 40 + 18) * 3) as usize] < 40);
        assert!(painted.data[((8 * 40 + 2) * 3) as usize] > 215);
    }
}
