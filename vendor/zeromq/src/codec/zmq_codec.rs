use super::command::ZmqCommand;
use super::error::CodecError;
use super::greeting::ZmqGreeting;
use super::Message;
use crate::curve::{Opener, Sealer, MESSAGE_OVERHEAD};
use crate::{SocketOptions, ZmqMessage};

use asynchronous_codec::{Decoder, Encoder};
use bytes::{Buf, BufMut, Bytes, BytesMut};

use std::convert::TryFrom;

/// The longest command frame a peer may announce. Commands are handshake steps (READY with the
/// socket type, an identity of at most 255 bytes and a few metadata properties: a few hundred
/// bytes), never data, so this limit holds whatever the socket's `max_message_size` is.
pub(crate) const MAX_COMMAND_SIZE: usize = 8 * 1024;

#[derive(Debug, Clone, Copy)]
struct Frame {
    command: bool,
    long: bool,
    more: bool,
}

#[derive(Debug)]
enum DecoderState {
    Greeting,
    FrameHeader,
    FrameLen(Frame),
    Frame(Frame),
}

pub struct ZmqCodec {
    state: DecoderState,
    waiting_for: usize, // Number of bytes needed to decode frame
    // Needed to store incoming multipart message
    // This allows to encapsulate its processing inside codec and not expose
    // internal details to higher levels
    buffered_message: Option<ZmqMessage>,
    // The length of the frames in `buffered_message`: a multipart message counts as a whole.
    buffered_len: usize,
    max_message_size: usize,
    max_read_chunk_size: usize,
    // During a security handshake, command frames are the mechanism's, read as bytes.
    mechanism_commands: bool,
    // After a CURVE handshake: every frame is a MESSAGE, boxed and unboxed with the session key.
    opener: Option<Opener>,
    sealer: Option<Sealer>,
}

impl std::fmt::Debug for ZmqCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZmqCodec")
            .field("state", &self.state)
            .field("waiting_for", &self.waiting_for)
            .field(
                "encrypted",
                &(self.opener.is_some() || self.sealer.is_some()),
            )
            .finish_non_exhaustive()
    }
}

impl ZmqCodec {
    pub fn new() -> Self {
        Self::with_options(&SocketOptions::default())
    }

    pub(crate) fn with_options(options: &SocketOptions) -> Self {
        Self {
            state: DecoderState::Greeting,
            waiting_for: 64, // len of the greeting frame
            buffered_message: None,
            buffered_len: 0,
            max_message_size: options.max_message_size.unwrap_or(usize::MAX),
            max_read_chunk_size: options.read_buffer_max_size,
            mechanism_commands: false,
            opener: None,
            sealer: None,
        }
    }

    /// From now on, command frames are a security handshake's, yielded as
    /// [`Message::Mechanism`].
    pub(crate) fn read_mechanism_commands(&mut self) {
        self.mechanism_commands = true;
    }

    /// The end of a CURVE handshake, on the reading side: every frame from here is a MESSAGE.
    pub(crate) fn open_with(&mut self, opener: Opener) {
        self.mechanism_commands = false;
        self.opener = Some(opener);
    }

    /// The end of a CURVE handshake, on the writing side: every frame from here is boxed.
    pub(crate) fn seal_with(&mut self, sealer: Sealer) {
        self.sealer = Some(sealer);
    }

    /// Adds one frame's data to the message being read; the whole message once it is complete.
    fn push_frame(&mut self, data: Bytes, more: bool) -> Option<Message> {
        self.buffered_len += data.len();
        match &mut self.buffered_message {
            Some(v) => v.push_back(data),
            None => self.buffered_message = Some(ZmqMessage::from(data)),
        }
        if more {
            return None;
        }
        self.buffered_len = 0;
        // Quoth the Raven “Nevermore.”
        Some(Message::Message(
            self.buffered_message
                .take()
                .expect("Corrupted decoder state"),
        ))
    }

    /// A whole frame read (its header told whether it is a `command` and has `more`).
    fn decode_frame(
        &mut self,
        data: BytesMut,
        command: bool,
        more: bool,
    ) -> Result<Option<Message>, CodecError> {
        if command {
            if self.opener.is_some() {
                return Err(CodecError::Decode(
                    "a command frame after the CURVE handshake (commands travel boxed)",
                ));
            }
            if self.mechanism_commands {
                return Ok(Some(Message::Mechanism(data.freeze())));
            }
            return Ok(Some(Message::Command(ZmqCommand::try_from(data.freeze())?)));
        }
        if self.mechanism_commands {
            return Err(CodecError::Decode(
                "a message before the security handshake was complete",
            ));
        }
        let Some(opener) = &mut self.opener else {
            return Ok(self.push_frame(data.freeze(), more));
        };
        let opened = opener.open(data)?;
        if opened.command {
            return Ok(Some(Message::Command(ZmqCommand::try_from(opened.data)?)));
        }
        Ok(self.push_frame(opened.data, opened.more))
    }

    /// Returns the minimum additional bytes needed before decode can progress.
    pub(crate) fn bytes_needed(&self, buffered_len: usize) -> usize {
        self.waiting_for.saturating_sub(buffered_len)
    }
}

impl Default for ZmqCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder for ZmqCodec {
    type Error = CodecError;
    type Item = Message;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        // A single read can contain thousands of frames; keep stack use independent of that count.
        loop {
            if src.len() < self.waiting_for {
                // The final read may coalesce bytes from the following frame. Reserve
                // its headroom now rather than grow shared storage again at the frame tail.
                // Qualifying retained frames must leave a full chunk for the next read.
                // For frames near one chunk, spare shared storage makes the next
                // almost-complete frame copy its body when reserve detaches it from
                // a retained predecessor. Limit headroom to frames spanning more
                // than two chunks, where it adds less than half the body size.
                let reserve_to = if self.waiting_for > 2 * self.max_read_chunk_size {
                    // Frame lengths are validated with this headroom before entering Frame.
                    self.waiting_for + self.max_read_chunk_size
                } else {
                    self.waiting_for
                };
                src.reserve(reserve_to - src.len());
                return Ok(None);
            }
            match self.state {
                DecoderState::Greeting => {
                    if src[0] != 0xff {
                        return Err(CodecError::Decode("Bad first byte of greeting"));
                    }
                    self.state = DecoderState::FrameHeader;
                    self.waiting_for = 1;
                    return Ok(Some(Message::Greeting(ZmqGreeting::try_from(
                        src.split_to(64).freeze(),
                    )?)));
                }
                DecoderState::FrameHeader => {
                    let flags = src.get_u8();

                    let frame = Frame {
                        command: (flags & 0b0000_0100) != 0,
                        long: (flags & 0b0000_0010) != 0,
                        more: (flags & 0b0000_0001) != 0,
                    };
                    self.state = DecoderState::FrameLen(frame);
                    self.waiting_for = if frame.long { 8 } else { 1 };
                }
                DecoderState::FrameLen(frame) => {
                    let frame_len = if frame.long {
                        let len = usize::try_from(src.get_u64()).map_err(|_error| {
                            CodecError::Decode("Frame length exceeds read buffer capacity")
                        })?;
                        // The reader may prepare a full read chunk at the frame tail.
                        // Reject unrepresentable lengths here, before reserve or resize.
                        len.checked_add(self.max_read_chunk_size)
                            .filter(|&capacity| isize::try_from(capacity).is_ok())
                            .ok_or(CodecError::Decode(
                                "Frame length exceeds read buffer capacity",
                            ))?;
                        len
                    } else {
                        usize::from(src.get_u8())
                    };
                    // The length is the peer's claim, read before any handshake or
                    // authentication: refuse it before the next pass reserves that much.
                    if frame.command && frame_len > MAX_COMMAND_SIZE {
                        log::warn!("Refused a {frame_len}-byte command frame from a peer");
                        return Err(CodecError::Decode("Command frame exceeds maximum size"));
                    }
                    // A boxed frame carries its data with a fixed overhead.
                    let overhead = if self.opener.is_some() {
                        MESSAGE_OVERHEAD
                    } else {
                        0
                    };
                    if !frame.command
                        && frame_len
                            > self
                                .max_message_size
                                .saturating_sub(self.buffered_len)
                                .saturating_add(overhead)
                    {
                        log::warn!(
                            "Refused a {frame_len}-byte frame from a peer after {} bytes of its \
                             message: the maximum message size is {}",
                            self.buffered_len,
                            self.max_message_size
                        );
                        return Err(CodecError::Decode("Message exceeds maximum size"));
                    }
                    self.state = DecoderState::Frame(frame);
                    self.waiting_for = frame_len;
                }
                DecoderState::Frame(frame) => {
                    let data = src.split_to(self.waiting_for);
                    self.state = DecoderState::FrameHeader;
                    self.waiting_for = 1;
                    if let Some(message) = self.decode_frame(data, frame.command, frame.more)? {
                        return Ok(Some(message));
                    }
                }
            }
        }
    }
}

fn encode_frame(frame: &Bytes, dst: &mut BytesMut, more: bool) {
    let mut flags: u8 = 0;
    if more {
        flags |= 0b0000_0001;
    }
    let len = frame.len();
    if len > 255 {
        flags |= 0b0000_0010;
        dst.reserve(len + 9);
        let mut header = [0u8; 9];
        header[0] = flags;
        header[1..].copy_from_slice(&(len as u64).to_be_bytes());
        dst.extend_from_slice(&header);
    } else {
        dst.reserve(len + 2);
        dst.extend_from_slice(&[flags, len as u8]);
    }
    dst.extend_from_slice(frame.as_ref());
}

impl Encoder for ZmqCodec {
    type Error = CodecError;
    type Item<'a> = Message;

    fn encode(&mut self, message: Self::Item<'_>, dst: &mut BytesMut) -> Result<(), Self::Error> {
        match message {
            Message::Greeting(payload) => dst.unsplit(payload.into()),
            Message::Command(command) => dst.unsplit(command.into()),
            Message::Mechanism(command) => {
                if command.len() > 255 {
                    dst.put_u8(0b0000_0110);
                    dst.put_u64(command.len() as u64);
                } else {
                    dst.put_u8(0b0000_0100);
                    dst.put_u8(command.len() as u8);
                }
                dst.extend_from_slice(&command);
            }
            Message::Message(message) if self.sealer.is_some() => {
                let sealer = self.sealer.as_mut().expect("checked");
                let last_element = message.len() - 1;
                for (idx, part) in message.iter().enumerate() {
                    sealer.seal(part, idx != last_element, dst)?;
                }
            }
            Message::Message(message) => {
                let last_element = message.len() - 1;
                for (idx, part) in message.iter().enumerate() {
                    encode_frame(part, dst, idx != last_element);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    mod multipart;
    mod read_buffer;

    use super::*;

    #[test]
    pub fn test_message_decode_1() {
        let data = "01093c4944537c4d53473e01403239386166316563653932306635373637656132393438376261363164643436613534636334313262653032303339316139653831636535633234383039653001cb7b226d73675f6964223a2236356336396230312d636634622d343563322d616165612d323263306365326531316533222c2273657373696f6e223a2230326462356631642d386535632d346464612d383064342d303337363835343465616138222c22757365726e616d65223a223c544f444f3e222c2264617465223a22323032312d31322d32395430343a35393a33392e3539333533372b30303a3030222c226d73675f74797065223a22657865637574655f7265706c79222c2276657273696f6e223a22352e33227d01c07b226d73675f6964223a223965303336313036373262393433393961343432316539373330333330326162222c2273657373696f6e223a226231323139393364663235613432643839376135653163383362306337616665222c22757365726e616d65223a22757365726e616d65222c2264617465223a22313937302d30312d30315430303a30303a30302b30303a3030222c226d73675f74797065223a22657865637574655f72657175657374222c2276657273696f6e223a22352e32227d01027b7d00467b22737461747573223a226f6b222c22657865637574696f6e5f636f756e74223a312c227061796c6f6164223a5b5d2c22757365725f65787072657373696f6e73223a7b7d7d";
        let hex_data = hex::decode(data).unwrap();
        let mut bytes = BytesMut::from(hex_data.as_slice());
        let mut codec = ZmqCodec::new();
        codec.waiting_for = 1;
        codec.state = DecoderState::FrameHeader;

        let message = codec
            .decode(&mut bytes)
            .expect("decode success")
            .expect("single message");

        eprintln!("{:?}", message);
        match message {
            Message::Message(m) => {
                assert_eq!(6, m.into_vecdeque().len());
            }
            _ => panic!("wrong message type"),
        }
        assert_eq!(bytes.len(), 0);
    }

    #[test]
    pub fn test_message_decode_2() {
        let data = "01093c4944537c4d53473e01406139346435366530343438353335303831316561623063663730623464356366373933653431653838616330666339646263346562326238616136643635306601cb7b226d73675f6964223a2263383466623933372d333162662d346335622d386430392d386535633230633434333636222c2273657373696f6e223a2230326462356631642d386535632d346464612d383064342d303337363835343465616138222c22757365726e616d65223a223c544f444f3e222c2264617465223a22323032312d31322d32395430343a35393a34332e3037343831332b30303a3030222c226d73675f74797065223a22657865637574655f7265706c79222c2276657273696f6e223a22352e33227d01c07b226d73675f6964223a223238646635316334303933313433643339393131346664333439643530396634222c2273657373696f6e223a226231323139393364663235613432643839376135653163383362306337616665222c22757365726e616d65223a22757365726e616d65222c2264617465223a22313937302d30312d30315430303a30303a30302b30303a3030222c226d73675f74797065223a22657865637574655f72657175657374222c2276657273696f6e223a22352e32227d01027b7d00467b22737461747573223a226f6b222c22657865637574696f6e5f636f756e74223a322c227061796c6f6164223a5b5d2c22757365725f65787072657373696f6e73223a7b7d7d";
        let hex_data = hex::decode(data).unwrap();
        let mut bytes = BytesMut::from(hex_data.as_slice());
        let mut codec = ZmqCodec::new();
        codec.waiting_for = 1;
        codec.state = DecoderState::FrameHeader;

        let message = codec
            .decode(&mut bytes)
            .expect("decode success")
            .expect("single message");
        eprintln!("{:?}", message);
        assert_eq!(bytes.len(), 0);
        match message {
            Message::Message(m) => {
                assert_eq!(6, m.into_vecdeque().len());
            }
            _ => panic!("wrong message type"),
        }
    }
}
