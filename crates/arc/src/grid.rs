//! Fixed-size grids and row-bitmask selections.
//!
//! A canvas is `S × S` cells (`S ≤ 32`); a cell is an `i8` colour 0–9, or -1 for JaxARC's
//! padding. A selection is one `u32` per row: bit `c` of row `r` selects cell `(r, c)`.

/// An `S × S` canvas of colours, row-major.
pub type Grid<const S: usize> = [[i8; S]; S];

/// A selection over an `S × S` canvas: bit `c` of `mask[r]` selects cell `(r, c)`.
pub type Mask<const S: usize> = [u32; S];

/// All-ones bits for the `S` columns of a row.
#[inline(always)]
pub const fn row_bits<const S: usize>() -> u32 {
    if S >= 32 { u32::MAX } else { (1u32 << S) - 1 }
}

/// Sets every cell outside the top-left `h × w` to `v` (JaxARC's padding is -1).
pub(crate) fn fill_outside<const S: usize>(g: &mut Grid<S>, h: usize, w: usize, v: i8) {
    for (r, row) in g.iter_mut().enumerate() {
        for (c, x) in row.iter_mut().enumerate() {
            if r >= h || c >= w {
                *x = v;
            }
        }
    }
}

/// Whether any cell is selected.
#[inline]
pub fn any<const S: usize>(m: &Mask<S>) -> bool {
    m.iter().any(|&r| r != 0)
}

/// Number of selected cells.
#[inline]
pub fn count<const S: usize>(m: &Mask<S>) -> u32 {
    m.iter().map(|r| r.count_ones()).sum()
}

/// Bit `r` set where row `r` has any selected cell.
#[inline(always)]
fn row_mask<const S: usize>(m: &Mask<S>) -> u32 {
    m.iter().enumerate().fold(0u32, |a, (r, &b)| a | (((b != 0) as u32) << r))
}

/// Inclusive bounding box `(rmin, rmax, cmin, cmax)` of the selected cells (branch-free
/// over the rows: random selections make row loops mispredict).
#[inline]
pub fn bbox<const S: usize>(m: &Mask<S>) -> Option<(usize, usize, usize, usize)> {
    let rows = row_mask(m);
    if rows == 0 {
        return None;
    }
    let cols = m.iter().fold(0u32, |a, &r| a | r);
    Some((
        rows.trailing_zeros() as usize,
        31 - rows.leading_zeros() as usize,
        cols.trailing_zeros() as usize,
        31 - cols.leading_zeros() as usize,
    ))
}

/// First selected cell in row-major order.
#[inline]
pub fn first<const S: usize>(m: &Mask<S>) -> Option<(usize, usize)> {
    let rows = row_mask(m);
    if rows == 0 {
        return None;
    }
    let r = rows.trailing_zeros() as usize;
    Some((r, m[r].trailing_zeros() as usize))
}

/// The inclusive rectangle `[r0, r1] × [c0, c1]` (coordinates must be `< S`).
#[inline]
pub fn rect<const S: usize>(r0: usize, r1: usize, c0: usize, c1: usize) -> Mask<S> {
    let bits = (u32::MAX >> (31 - c1)) & (u32::MAX << c0);
    std::array::from_fn(|r| bits & ((r >= r0 && r <= r1) as u32).wrapping_neg())
}

/// The top-left `h × w` rectangle (empty if either is 0).
#[inline]
pub fn top_left<const S: usize>(h: usize, w: usize) -> Mask<S> {
    if h == 0 || w == 0 { [0; S] } else { rect(0, h.min(S) - 1, 0, w.min(S) - 1) }
}

/// Whether cell `(r, c)` is selected.
#[inline(always)]
pub fn get<const S: usize>(m: &Mask<S>, r: usize, c: usize) -> bool {
    m[r] >> c & 1 != 0
}

/// Cell-wise AND.
#[inline]
pub fn and<const S: usize>(a: &Mask<S>, b: &Mask<S>) -> Mask<S> {
    std::array::from_fn(|r| a[r] & b[r])
}

/// Byte masks: entry `b` has byte `i` = 0xFF where bit `i` of `b` is set.
const BYTE_MASK: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut i = 0;
        while i < 8 {
            if b >> i & 1 != 0 {
                t[b] |= 0xFF << (8 * i);
            }
            i += 1;
        }
        b += 1;
    }
    t
};

/// `row[c] = if bit c of bits { a[c] } else { row[c] }`, eight cells per word.
#[inline(always)]
pub fn blend_row(row: &mut [i8], bits: u32, a: &[i8]) {
    let n = row.len().min(a.len());
    let mut c = 0;
    while c + 8 <= n {
        let m = BYTE_MASK[(bits >> c & 0xFF) as usize];
        let w = u64::from_ne_bytes(std::array::from_fn(|k| row[c + k] as u8));
        let v = u64::from_ne_bytes(std::array::from_fn(|k| a[c + k] as u8));
        let out = ((w & !m) | (v & m)).to_ne_bytes();
        for k in 0..8 {
            row[c + k] = out[k] as i8;
        }
        c += 8;
    }
    while c < n {
        // Branch-free: random selections make a branch here mispredict half the time.
        let m = -((bits >> c & 1) as i8);
        row[c] = (row[c] & !m) | (a[c] & m);
        c += 1;
    }
}

/// `out[c] = if bit c of bits { a[c] } else { b[c] }`, eight cells per word. Unlike
/// [`blend_row`] it never reads `out`: a row just written as a whole (`*out = *b` then a
/// blend) makes the blend's word loads wait on those stores.
#[inline(always)]
pub fn select_row(out: &mut [i8], bits: u32, a: &[i8], b: &[i8]) {
    let n = out.len().min(a.len()).min(b.len());
    let mut c = 0;
    while c + 8 <= n {
        let m = BYTE_MASK[(bits >> c & 0xFF) as usize];
        let w = u64::from_ne_bytes(std::array::from_fn(|k| b[c + k] as u8));
        let v = u64::from_ne_bytes(std::array::from_fn(|k| a[c + k] as u8));
        let word = ((w & !m) | (v & m)).to_ne_bytes();
        for k in 0..8 {
            out[c + k] = word[k] as i8;
        }
        c += 8;
    }
    while c < n {
        let m = -((bits >> c & 1) as i8);
        out[c] = (b[c] & !m) | (a[c] & m);
        c += 1;
    }
}

/// Writes a row's bits as 0/1 cells, eight per table lookup.
#[inline]
pub fn bits_to_cells(bits: u32, out: &mut [i8]) {
    for (k, chunk) in out.chunks_mut(8).enumerate() {
        let ones =
            (BYTE_MASK[(bits >> (8 * k) & 0xFF) as usize] & 0x0101_0101_0101_0101).to_ne_bytes();
        for (o, &b) in chunk.iter_mut().zip(ones.iter()) {
            *o = b as i8;
        }
    }
}

/// Writes `colour` into every selected cell.
#[inline]
pub fn fill<const S: usize>(g: &mut Grid<S>, m: &Mask<S>, colour: i8) {
    let full = [colour; S];
    for (row, &bits) in g.iter_mut().zip(m.iter()) {
        if bits != 0 {
            blend_row(row, bits, &full);
        }
    }
}

/// Copies `h × w` cells from a row-major slice into the top-left of a canvas, filling the
/// rest with `pad`.
pub fn from_cells<const S: usize>(cells: &[u8], h: usize, w: usize, pad: i8) -> Grid<S> {
    let mut g = [[pad; S]; S];
    for r in 0..h.min(S) {
        for c in 0..w.min(S) {
            g[r][c] = cells[r * w + c] as i8;
        }
    }
    g
}

/// The 4-connected region of `(r, c)`'s colour around it, inside `allowed` (bitmask dilation,
/// at most `max_iters` expansions; `u32::MAX` for the whole region).
pub fn flood_region<const S: usize>(
    g: &Grid<S>,
    allowed: &Mask<S>,
    r: usize,
    c: usize,
    max_iters: u32,
) -> Mask<S> {
    let colour = g[r][c];
    let mut region = [0u32; S];
    for (i, row) in g.iter().enumerate() {
        let mut bits = 0u32;
        for (j, &v) in row.iter().enumerate() {
            bits |= ((v == colour) as u32) << j;
        }
        region[i] = bits & allowed[i];
    }
    let mut cur = [0u32; S];
    cur[r] = 1 << c;
    let rb = row_bits::<S>();
    let mut it = 0;
    while it < max_iters {
        let mut next = [0u32; S];
        let mut changed = false;
        for i in 0..S {
            let mut v = cur[i] | (cur[i] << 1) | (cur[i] >> 1);
            if i > 0 {
                v |= cur[i - 1];
            }
            if i + 1 < S {
                v |= cur[i + 1];
            }
            next[i] = v & region[i] & rb;
            changed |= next[i] != cur[i];
        }
        cur = next;
        it += 1;
        if !changed {
            break;
        }
    }
    cur
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn rect_bbox_roundtrip(a in 0usize..30, b in 0usize..30, c in 0usize..30, d in 0usize..30) {
            let (r0, r1, c0, c1) = (a.min(b), a.max(b), c.min(d), c.max(d));
            let m = rect::<30>(r0, r1, c0, c1);
            prop_assert_eq!(bbox(&m), Some((r0, r1, c0, c1)));
            prop_assert_eq!(count(&m) as usize, (r1 - r0 + 1) * (c1 - c0 + 1));
            prop_assert_eq!(first(&m), Some((r0, c0)));
        }

        #[test]
        fn fill_touches_exactly_the_mask(bits in proptest::collection::vec(0u32..32, 5)) {
            let m: Mask<5> = std::array::from_fn(|r| bits[r]);
            let mut g = [[0i8; 5]; 5];
            fill(&mut g, &m, 7);
            for r in 0..5 { for c in 0..5 { prop_assert_eq!(g[r][c] == 7, get(&m, r, c)); } }
        }

        /// Both row blends pick `a` where a bit is set and the other row elsewhere, cell for
        /// cell, at every width (the word loop and the tail).
        #[test]
        fn row_blends_pick_by_bit(bits in proptest::num::u32::ANY, n in 0usize..31, seed in proptest::num::u64::ANY) {
            let cells = |k: u64| -> Vec<i8> {
                (0..n as u64).map(|c| (seed.wrapping_mul(k + 3).wrapping_add(c * 97) % 21) as i8 - 10).collect()
            };
            let (a, b) = (cells(1), cells(2));
            let want: Vec<i8> = (0..n).map(|c| if bits >> c & 1 == 1 { a[c] } else { b[c] }).collect();
            let mut out = vec![99i8; n];
            select_row(&mut out, bits, &a, &b);
            prop_assert_eq!(&out, &want);
            let mut row = b.clone();
            blend_row(&mut row, bits, &a);
            prop_assert_eq!(&row, &want);
        }
    }

    #[test]
    fn empty_mask() {
        let m = [0u32; 4];
        assert!(!super::any(&m));
        assert_eq!(bbox(&m), None);
        assert_eq!(top_left::<4>(0, 3), m);
    }
}
