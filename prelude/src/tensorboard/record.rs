//! TFRecord framing, the container of TensorBoard's event files: each record is
//!
//! ```text
//! u64 LE   length of data
//! u32 LE   masked CRC32C of those 8 length bytes
//! [u8]     data (here one serialized `Event`)
//! u32 LE   masked CRC32C of data
//! ```
//!
//! The CRC is masked because TFRecord files often hold CRCs of their own contents, and a CRC of
//! data that ends in its own CRC is a degenerate value (TensorFlow's `crc32c.h`, `Mask`).

use std::fmt;
use std::io::{self, Write};

/// The constant TensorFlow adds after rotating a CRC (`kMaskDelta`).
const MASK_DELTA: u32 = 0xa282_ead8;

/// `((crc >> 15) | (crc << 17)) + 0xa282ead8`, of the CRC32C (Castagnoli) of `data`.
///
/// ```
/// use tchbook_prelude::tensorboard::record::masked_crc32c;
/// let crc: u32 = 0xE306_9283; // CRC32C("123456789")
/// assert_eq!(masked_crc32c(b"123456789"), crc.rotate_right(15).wrapping_add(0xa282_ead8));
/// ```
pub fn masked_crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
        .rotate_right(15)
        .wrapping_add(MASK_DELTA)
}

/// Writes `data` as one record.
///
/// ```
/// use tchbook_prelude::tensorboard::record::{read_records, write_record};
/// let mut file = Vec::new();
/// write_record(&mut file, b"event").unwrap();
/// assert_eq!(file.len(), 8 + 4 + 5 + 4);
/// assert_eq!(read_records(&file).unwrap(), [b"event".to_vec()]);
/// ```
pub fn write_record(out: &mut impl Write, data: &[u8]) -> io::Result<()> {
    let length = (data.len() as u64).to_le_bytes();
    out.write_all(&length)?;
    out.write_all(&masked_crc32c(&length).to_le_bytes())?;
    out.write_all(data)?;
    out.write_all(&masked_crc32c(data).to_le_bytes())
}

/// The data of every record in `bytes`, each CRC checked, as TensorBoard's reader checks them.
///
/// ```
/// use tchbook_prelude::tensorboard::record::{read_records, write_record};
/// let mut file = Vec::new();
/// write_record(&mut file, b"event").unwrap();
/// file[13] ^= 1; // one flipped bit in the data
/// assert!(read_records(&file).unwrap_err().to_string().contains("data CRC"));
/// ```
pub fn read_records(bytes: &[u8]) -> Result<Vec<Vec<u8>>, RecordError> {
    let mut records = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let header = bytes
            .get(at..at + 12)
            .ok_or(RecordError::Truncated { offset: at })?;
        let (length, length_crc) = header.split_at(8);
        if masked_crc32c(length) != u32::from_le_bytes(length_crc.try_into().unwrap()) {
            return Err(RecordError::LengthCrc { offset: at });
        }
        let n = usize::try_from(u64::from_le_bytes(length.try_into().unwrap()))
            .map_err(|_| RecordError::Truncated { offset: at })?;
        let body = at + 12;
        let data = body
            .checked_add(n)
            .and_then(|end| bytes.get(body..end))
            .ok_or(RecordError::Truncated { offset: at })?;
        let crc = bytes
            .get(body + n..body + n + 4)
            .ok_or(RecordError::Truncated { offset: at })?;
        if masked_crc32c(data) != u32::from_le_bytes(crc.try_into().unwrap()) {
            return Err(RecordError::DataCrc { offset: at });
        }
        records.push(data.to_vec());
        at = body + n + 4;
    }
    Ok(records)
}

/// Why [`read_records`] stopped: the byte offset of the record that is wrong.
///
/// ```
/// use tchbook_prelude::tensorboard::record::{RecordError, read_records, write_record};
/// let mut file = Vec::new();
/// write_record(&mut file, b"event").unwrap();
/// assert_eq!(read_records(&file[..10]), Err(RecordError::Truncated { offset: 0 }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// The file ends inside a record (a writer still running, or a cut copy).
    Truncated {
        /// Where the record starts.
        offset: usize,
    },
    /// The length's CRC does not match: not a TFRecord file, or damaged.
    LengthCrc {
        /// Where the record starts.
        offset: usize,
    },
    /// The data's CRC does not match: the record is damaged.
    DataCrc {
        /// Where the record starts.
        offset: usize,
    },
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Truncated { offset } => {
                write!(f, "TFRecord truncated in the record at byte {offset}")
            }
            RecordError::LengthCrc { offset } => write!(
                f,
                "TFRecord length CRC mismatch at byte {offset}: not an event file, or damaged"
            ),
            RecordError::DataCrc { offset } => {
                write!(
                    f,
                    "TFRecord data CRC mismatch in the record at byte {offset}"
                )
            }
        }
    }
}

impl std::error::Error for RecordError {}
