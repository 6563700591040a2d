//! Images for TensorBoard: torchvision's `make_grid`, and a CHW tensor as the PNG that
//! PyTorch's `add_image` writes.

use tch::{Device, Kind, Tensor};

/// `torchvision.utils.make_grid(images)`: a batch `[B, C, H, W]` laid out 8 to a row with 2
/// pixels of padding (value 0) around each image, as one `[C, H', W']` image. One-channel
/// images become three channels, as in torchvision; a batch of one is returned as it is,
/// without padding; a single image `[C, H, W]` or `[H, W]` is a batch of one.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let images = Tensor::ones([10, 1, 28, 28], (Kind::Float, Device::Cpu));
/// let grid = make_grid(&images);
/// // 8 + 2 images: 2 rows; (28 + 2) per image, plus the padding's last row and column
/// assert_eq!(grid.size(), [3, 2 * 30 + 2, 8 * 30 + 2]);
/// ```
pub fn make_grid(images: &Tensor) -> Tensor {
    make_grid_with(images, 8, 2, 0.0)
}

/// `make_grid(images, nrow=nrow, padding=padding, pad_value=pad_value)`.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let images = Tensor::zeros([4, 3, 5, 5], (Kind::Float, Device::Cpu));
/// let grid = make_grid_with(&images, 2, 1, 1.0);
/// assert_eq!(grid.size(), [3, 13, 13]);
/// assert_eq!(grid.double_value(&[0, 0, 0]), 1.0); // padding
/// assert_eq!(grid.double_value(&[0, 1, 1]), 0.0); // the first image
/// ```
pub fn make_grid_with(images: &Tensor, nrow: usize, padding: usize, pad_value: f64) -> Tensor {
    let mut batch = match images.dim() {
        2 => images.unsqueeze(0).unsqueeze(0),
        3 => images.unsqueeze(0),
        4 => images.shallow_clone(),
        d => panic!("make_grid: expected [B, C, H, W], [C, H, W] or [H, W], got {d} dimensions"),
    };
    if batch.size()[1] == 1 {
        batch = Tensor::cat(&[&batch, &batch, &batch], 1);
    }
    let size = batch.size();
    let (n, c, h, w) = (size[0], size[1], size[2], size[3]);
    if n == 1 {
        return batch.squeeze_dim(0);
    }
    let padding = padding as i64;
    let xmaps = (nrow.max(1) as i64).min(n);
    let ymaps = (n + xmaps - 1) / xmaps;
    let (height, width) = (h + padding, w + padding);
    let grid = Tensor::full(
        [c, height * ymaps + padding, width * xmaps + padding],
        pad_value,
        (batch.kind(), batch.device()),
    );
    for k in 0..n {
        let (y, x) = (k / xmaps, k % xmaps);
        grid.narrow(1, y * height + padding, h)
            .narrow(2, x * width + padding, w)
            .copy_(&batch.get(k));
    }
    grid
}

/// A PNG of a `[C, H, W]` (or `[H, W]`) image as PyTorch's `add_image` makes it: floats are
/// taken as 0..1 and scaled by 255, other kinds as 0..255; both are clipped and truncated to
/// bytes. One channel becomes RGB (as PyTorch repeats it), 3 is RGB, 4 RGBA.
/// Returns the PNG, its height, width and colorspace (3 or 4), or what is wrong with the shape.
pub(crate) fn image_png(image: &Tensor) -> Result<(Vec<u8>, i64, i64, i32), String> {
    let chw = match image.dim() {
        2 => image.unsqueeze(0),
        3 => image.shallow_clone(),
        d => {
            return Err(format!(
                "expected an image [C, H, W] or [H, W], got {d} dimensions"
            ));
        }
    };
    let (c, h, w) = (chw.size()[0], chw.size()[1], chw.size()[2]);
    let chw = match c {
        1 => chw.repeat([3, 1, 1]),
        3 | 4 => chw,
        _ => return Err(format!("expected 1, 3 or 4 channels, got {c}")),
    };
    let scale = if chw.is_floating_point() { 255.0 } else { 1.0 };
    // float32 as PyTorch's make_np gives it, so that truncation lands where it lands there.
    let bytes = (chw.detach().to_device(Device::Cpu).to_kind(Kind::Float) * scale)
        .clamp(0.0, 255.0)
        .to_kind(Kind::Uint8)
        .permute([1, 2, 0])
        .contiguous();
    let pixels = Vec::<u8>::try_from(bytes.flatten(0, -1)).map_err(|e| e.to_string())?;
    let (color, colorspace) = if c == 4 {
        (png::ColorType::Rgba, 4)
    } else {
        (png::ColorType::Rgb, 3)
    };
    let png = crate::display::encode_png(&pixels, w as u32, h as u32, color);
    Ok((png, h, w, colorspace))
}
