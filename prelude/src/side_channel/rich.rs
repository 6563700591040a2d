//! "Render variable": a variable's rich view. A tensor as PyTorch prints it, with a heat map
//! when it has two dimensions; a var store's parameter table; the prelude's displayable values
//! (a loss plot, a run table) as a cell shows them; anything else as its line.

use super::summary::rendered;
use crate::device::VarStoreExt;
use crate::display::{Bundle, Render, encode_png};
use std::any::Any;
use tch::nn::VarStore;
use tch::{Kind, Tensor};
use tchbook_wire::side_channel::Variable;

use base64::Engine;
use serde_json::{Map, Value};

/// The heat map's longest side, in cells (a larger tensor is averaged down to it) and pixels.
const HEAT_CELLS: i64 = 64;
const HEAT_PIXELS: i64 = 256;

/// The MIME bundle and its metadata.
pub(super) fn view(
    value: &dyn Any,
    variable: &Variable,
) -> (Map<String, Value>, Map<String, Value>) {
    let bundle = if let Some(t) = value.downcast_ref::<Tensor>() {
        tensor(t)
    } else if let Some(vs) = value.downcast_ref::<VarStore>() {
        vs.named_parameters().bundle()
    } else if let Some(bundle) = rendered(value) {
        bundle
    } else {
        Bundle::text(format!(
            "{}: {} = {}",
            variable.name, variable.type_name, variable.value
        ))
    };
    (bundle.data(), bundle.metadata())
}

fn tensor(t: &Tensor) -> Bundle {
    let mut bundle = t.bundle();
    let two_dimensional = t.defined() && t.dim() == 2 && t.numel() > 0;
    if let Some(png) = two_dimensional
        .then(|| tch::no_grad(|| heat_map(t)).ok())
        .flatten()
    {
        let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
        let size = t.size();
        let alt = format!("Heat map of a {}×{} tensor", size[0], size[1]);
        let img = format!(
            "<p><img src=\"data:image/png;base64,{b64}\" alt=\"{alt}\" \
             style=\"image-rendering:pixelated\"></p>"
        );
        bundle.html = Some(format!("{}{img}", bundle.html.unwrap_or_default()));
        bundle.png = Some(png);
        bundle.alt = Some(alt);
    }
    bundle
}

/// The tensor's values, low to high as dark blue to yellow (viridis' ends and middle).
fn heat_map(t: &Tensor) -> Result<Vec<u8>, tch::TchError> {
    let size = t.size();
    let (rows, cols) = (size[0], size[1]);
    let mut values = t.f_to_kind(Kind::Float)?;
    if rows > HEAT_CELLS || cols > HEAT_CELLS {
        let (h, w) = (rows.min(HEAT_CELLS), cols.min(HEAT_CELLS));
        values = values
            .f_unsqueeze(0)?
            .f_unsqueeze(0)?
            .f_adaptive_avg_pool2d([h, w])?
            .f_squeeze()?
            .f_reshape([h, w])?;
    }
    let values = values.f_to_device(tch::Device::Cpu)?.f_contiguous()?;
    let (h, w) = (values.size()[0], values.size()[1]);
    let flat: Vec<f32> = Vec::<f32>::try_from(values.f_flatten(0, -1)?)?;
    let finite = flat.iter().copied().filter(|v| v.is_finite());
    let low = finite.clone().fold(f32::INFINITY, f32::min);
    let high = finite.fold(f32::NEG_INFINITY, f32::max);
    let span = if high > low { high - low } else { 1.0 };
    let scale = (HEAT_PIXELS / h.max(w)).max(1);
    let (pw, ph) = (w * scale, h * scale);
    let mut pixels = Vec::with_capacity((pw * ph * 3) as usize);
    for y in 0..ph {
        for x in 0..pw {
            let v = flat[((y / scale) * w + x / scale) as usize];
            let at = if v.is_finite() { (v - low) / span } else { 0.0 };
            pixels.extend(colour(at));
        }
    }
    Ok(encode_png(
        &pixels,
        pw as u32,
        ph as u32,
        png::ColorType::Rgb,
    ))
}

/// Viridis at `at` in [0, 1], from five of its stops.
fn colour(at: f32) -> [u8; 3] {
    const STOPS: [[f32; 3]; 5] = [
        [68.0, 1.0, 84.0],
        [59.0, 82.0, 139.0],
        [33.0, 145.0, 140.0],
        [94.0, 201.0, 98.0],
        [253.0, 231.0, 37.0],
    ];
    let position = at.clamp(0.0, 1.0) * 4.0;
    let i = (position.floor() as usize).min(3);
    let f = position - i as f32;
    let mix = |c: usize| (STOPS[i][c] + (STOPS[i + 1][c] - STOPS[i][c]) * f).round() as u8;
    [mix(0), mix(1), mix(2)]
}
