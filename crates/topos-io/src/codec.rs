//! Little-endian encoding with bounds-checked decoding: a malformed file yields an error, never a
//! panic or an out-of-bounds read.

/// Appends little-endian values to a byte buffer.
#[derive(Default, Debug)]
pub struct ByteWriter {
    pub buf: Vec<u8>,
}

impl ByteWriter {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn f64(&mut self, v: f64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// A length-prefixed UTF-8 string.
    pub fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.buf.extend_from_slice(s.as_bytes());
    }
    /// Pads with zeros to a multiple of `align` bytes (for sections read in place from a mapping).
    pub fn align(&mut self, align: usize) {
        while !self.buf.len().is_multiple_of(align) {
            self.buf.push(0);
        }
    }
    pub fn u16s(&mut self, v: &[u16]) {
        self.buf.reserve(v.len() * 2);
        for x in v {
            self.u16(*x);
        }
    }
    pub fn u32s(&mut self, v: &[u32]) {
        self.buf.reserve(v.len() * 4);
        for x in v {
            self.u32(*x);
        }
    }
    pub fn u64s(&mut self, v: &[u64]) {
        self.buf.reserve(v.len() * 8);
        for x in v {
            self.u64(*x);
        }
    }
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

/// Reads little-endian values from a byte slice; every read is bounds-checked and reports what was
/// being read when the data ran out.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }
    /// Current offset.
    pub fn position(&self) -> usize {
        self.pos
    }
    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }
    /// The next `n` bytes.
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if n > self.remaining() {
            return Err(format!(
                "{what} needs {n} bytes at offset {} but only {} remain",
                self.pos,
                self.remaining()
            ));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    pub fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }
    pub fn u16(&mut self, what: &str) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().unwrap()))
    }
    pub fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }
    pub fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }
    pub fn f64(&mut self, what: &str) -> Result<f64, String> {
        Ok(f64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }
    pub fn str(&mut self, what: &str) -> Result<&'a str, String> {
        let n = self.u32(what)? as usize;
        std::str::from_utf8(self.take(n, what)?).map_err(|_| format!("{what} is not UTF-8"))
    }
    /// Skips zero padding up to a multiple of `align` (relative to the slice start).
    pub fn align(&mut self, align: usize, what: &str) -> Result<(), String> {
        let pad = (align - self.pos % align) % align;
        self.take(pad, what).map(|_| ())
    }
    /// `n` little-endian u16 values, copied out.
    pub fn u16s(&mut self, n: usize, what: &str) -> Result<Vec<u16>, String> {
        let b = self.take(
            n.checked_mul(2)
                .ok_or_else(|| format!("{what}: size overflow"))?,
            what,
        )?;
        Ok(b.chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect())
    }
    /// `n` little-endian u32 values, copied out.
    pub fn u32s(&mut self, n: usize, what: &str) -> Result<Vec<u32>, String> {
        let b = self.take(
            n.checked_mul(4)
                .ok_or_else(|| format!("{what}: size overflow"))?,
            what,
        )?;
        Ok(b.chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect())
    }
    /// `n` little-endian u64 values, copied out.
    pub fn u64s(&mut self, n: usize, what: &str) -> Result<Vec<u64>, String> {
        let b = self.take(
            n.checked_mul(8)
                .ok_or_else(|| format!("{what}: size overflow"))?,
            what,
        )?;
        Ok(b.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_bounds() {
        let mut w = ByteWriter::new();
        w.u8(1);
        w.str("héllo");
        w.align(8);
        w.u64s(&[1, 2, 3]);
        w.f64(0.5);
        let mut r = ByteReader::new(&w.buf);
        assert_eq!(r.u8("a").unwrap(), 1);
        assert_eq!(r.str("b").unwrap(), "héllo");
        r.align(8, "pad").unwrap();
        assert_eq!(r.u64s(3, "c").unwrap(), vec![1, 2, 3]);
        assert_eq!(r.f64("d").unwrap(), 0.5);
        let e = r.u32("tail").unwrap_err();
        assert!(e.contains("tail"));
        let mut r = ByteReader::new(&[0xff, 0xff, 0xff, 0xff]);
        assert!(r.str("s").is_err());
    }
}
