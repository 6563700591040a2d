//! The device card: a picture of the machine, like `nvidia-smi` or Colab's resource view.

use super::select::{best_device, device_name};
use crate::cuda::{self, DeviceProperties, Versions};
use crate::display::{Bundle, Render, rich};
use crate::sys;
use tch::Device;

/// A picture of the machine, like `nvidia-smi` or Colab's resource view: CUDA devices with
/// compute capability, SMs and memory; versions; CPU model, cores and RAM.
///
/// ```
/// let card = tchbook_prelude::device::device_card();
/// assert!(card.to_string().contains("CPU"));
/// ```
#[derive(Debug, Clone)]
pub struct DeviceCard {
    /// The device [`best_device`] picks.
    pub best: Device,
    /// Each CUDA device with (free, total) memory where known.
    pub gpus: Vec<(DeviceProperties, Option<(u64, u64)>)>,
    /// torch / CUDA / cuDNN versions.
    pub versions: Versions,
    /// CPU model name.
    pub cpu_model: String,
    /// Physical cores.
    pub physical_cores: usize,
    /// Logical CPUs available to this process.
    pub logical_cores: usize,
    /// libtorch's intra-op threads.
    pub torch_threads: i32,
    /// System RAM (bytes).
    pub ram_total: u64,
    /// Available RAM (bytes).
    pub ram_available: u64,
}

/// Gathers a [`DeviceCard`] for this machine.
///
/// ```no_run
/// let card = tchbook_prelude::device::device_card();
/// println!("{card}"); // a cell ending with `device_card()` shows the HTML card
/// ```
pub fn device_card() -> DeviceCard {
    let gpus = (0..cuda::device_count())
        .filter_map(|i| cuda::get_device_properties(i).map(|p| (p, cuda::f_mem_get_info(i).ok())))
        .collect();
    DeviceCard {
        best: best_device(),
        gpus,
        versions: cuda::versions(),
        cpu_model: sys::cpu_model(),
        physical_cores: sys::physical_cores(),
        logical_cores: sys::logical_cores(),
        torch_threads: tch::get_num_threads(),
        ram_total: sys::ram_total(),
        ram_available: sys::ram_available(),
    }
}

impl DeviceCard {
    fn rows(&self) -> Vec<(String, String)> {
        let mut rows = vec![("Best device".to_string(), device_name(self.best))];
        if self.gpus.is_empty() {
            // On a GPU machine where CUDA failed, the card is where a user looks first: say why.
            let why = cuda::unavailable_reason();
            rows.push((
                "CUDA".into(),
                why.unwrap_or_else(|| "no CUDA device is present".into()),
            ));
        }
        for (p, mem) in &self.gpus {
            let memory = match mem {
                Some((free, total)) => {
                    format!(
                        "{} free of {}",
                        sys::human_bytes(*free),
                        sys::human_bytes(*total)
                    )
                }
                None => sys::human_bytes(p.total_memory),
            };
            rows.push((
                format!("cuda:{}", p.index),
                format!(
                    "{} · compute capability {}.{} · {} SMs · {}",
                    p.name, p.major, p.minor, p.multi_processor_count, memory
                ),
            ));
        }
        let v = &self.versions;
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "—".into());
        rows.push((
            "Versions".into(),
            format!(
                "torch {} · CUDA {} · driver CUDA {} · cuDNN {}",
                v.torch,
                opt(&v.cuda),
                opt(&v.driver),
                opt(&v.cudnn)
            ),
        ));
        rows.push((
            "CPU".into(),
            format!(
                "{} · {} cores / {} threads · torch uses {} threads",
                self.cpu_model, self.physical_cores, self.logical_cores, self.torch_threads
            ),
        ));
        rows.push((
            "RAM".into(),
            format!(
                "{} available of {}",
                sys::human_bytes(self.ram_available),
                sys::human_bytes(self.ram_total)
            ),
        ));
        rows
    }
}

impl Render for DeviceCard {
    fn bundle(&self) -> Bundle {
        let rows = self.rows();
        let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        let text = rows
            .iter()
            .map(|(k, v)| format!("{k:<width$}  {v}"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut html = String::from(
            "<table class=\"tchbook-device-card\" style=\"border:1px solid #ccc\"><tbody>",
        );
        for (k, v) in &rows {
            html.push_str(&format!(
                "<tr><th style=\"text-align:left\">{}</th><td style=\"text-align:left\">{}</td></tr>",
                sys::escape_html(k),
                sys::escape_html(v)
            ));
        }
        html.push_str("</tbody></table>");
        let mut devices: Vec<serde_json::Value> = self
            .gpus
            .iter()
            .map(|(p, mem)| {
                serde_json::json!({
                    "device": format!("cuda:{}", p.index), "name": p.name,
                    "total_memory": p.total_memory, "free_memory": mem.map(|m| m.0),
                    "compute_capability": [p.major, p.minor],
                    "multi_processor_count": p.multi_processor_count,
                })
            })
            .collect();
        if self.best == Device::Mps {
            devices.push(serde_json::json!({"device": "mps", "name": "Apple MPS"}));
        }
        devices.push(serde_json::json!({
            "device": "cpu", "name": self.cpu_model, "total_memory": self.ram_total,
            "free_memory": self.ram_available,
        }));
        let v = &self.versions;
        let json = serde_json::json!({
            "best_device": crate::display::device_name(self.best),
            "cuda_available": !self.gpus.is_empty(),
            "device_count": self.gpus.len(),
            "devices": devices,
            "torch_version": v.torch, "cuda_version": v.cuda, "driver_cuda_version": v.driver,
            "cudnn_version": v.cudnn,
            "cpu": {"model": self.cpu_model, "cores": self.physical_cores,
                    "threads": self.logical_cores, "torch_threads": self.torch_threads,
                    "ram_bytes": self.ram_total, "ram_available_bytes": self.ram_available},
        });
        Bundle::text(text)
            .with_html(html)
            .with_data("device-card", json)
    }
}

rich!(DeviceCard);
