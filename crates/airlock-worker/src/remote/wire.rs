//! The channel's frames, read so that none lingers: each frame is handed on as a
//! copy of its own (freed, and so zeroed, once read) and wiped where it arrived. The
//! read buffer is reused for the next frames, so without the wipe a request that
//! carried a secret (a session's open, a typing) stayed readable in the worker's
//! memory long after its session closed.

use std::io;

use bytes::{Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};
use zeroize::Zeroize as _;

/// Length-delimited frames, wiped from the read buffer once taken.
pub(crate) struct Wiping(pub(crate) LengthDelimitedCodec);

impl Decoder for Wiping {
    type Item = BytesMut;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> io::Result<Option<BytesMut>> {
        let Some(mut frame) = self.0.decode(src)? else {
            return Ok(None);
        };
        let copy = BytesMut::from(&frame[..]);
        frame.as_mut().zeroize();
        Ok(Some(copy))
    }
}

impl Encoder<Bytes> for Wiping {
    type Error = io::Error;

    fn encode(&mut self, item: Bytes, dst: &mut BytesMut) -> io::Result<()> {
        self.0.encode(item, dst)
    }
}
