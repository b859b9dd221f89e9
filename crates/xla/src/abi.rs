//! The typed FFI's C ABI as jaxlib ships it (`jaxlib/include/xla/ffi/api/c_api.h`, API 0.3):
//! the call frame a handler receives, decoded into safe views ([`Buffer`], [`Attrs`]), and the one entry
//! every Kestrel target goes through (`call`): the metadata query XLA makes when a target is
//! registered, the stage check, and errors returned as XLA errors (so JAX raises them as
//! Python exceptions) instead of a panic unwinding into XLA, which would abort the process.
//!
//! Only the structs' prefixes this crate reads are declared (each `#[repr(C)]` in the header's
//! field order); XLA owns every pointer for the duration of the call.
#![allow(unsafe_code)]

use std::ffi::{CString, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The header's version this crate implements (`XLA_FFI_API_MAJOR`, `XLA_FFI_API_MINOR`).
const API_MAJOR: i32 = 0;
const API_MINOR: i32 = 3;
/// `XLA_FFI_Extension_Metadata`.
const EXTENSION_METADATA: i32 = 1;
/// `XLA_FFI_ExecutionStage_EXECUTE`.
const STAGE_EXECUTE: i32 = 3;
/// `XLA_FFI_ArgType_BUFFER`, `XLA_FFI_RetType_BUFFER`.
const BUFFER: i32 = 1;
/// `XLA_FFI_AttrType_SCALAR`.
const ATTR_SCALAR: i32 = 3;
/// `XLA_FFI_Error_Code_INVALID_ARGUMENT`.
const INVALID_ARGUMENT: i32 = 3;

#[repr(C)]
struct ExtensionBase {
    struct_size: usize,
    kind: i32,
    next: *mut ExtensionBase,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct ApiVersion {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    major: i32,
    minor: i32,
}

/// An XLA error (opaque: made by the runtime's `XLA_FFI_Error_Create`).
pub enum XlaError {}

#[repr(C)]
struct ErrorCreateArgs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    message: *const c_char,
    errc: i32,
}

type ErrorCreate = unsafe extern "C" fn(*mut ErrorCreateArgs) -> *mut XlaError;

/// `XLA_FFI_Api` up to the first function this crate calls.
#[repr(C)]
pub struct Api {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    api_version: ApiVersion,
    internal_api: *const c_void,
    error_create: Option<ErrorCreate>,
}

#[repr(C)]
struct RawBuffer {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    dtype: i32,
    data: *mut c_void,
    rank: i64,
    dims: *const i64,
}

/// `XLA_FFI_Args` and `XLA_FFI_Rets` (the same layout).
#[repr(C)]
struct RawList {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    size: i64,
    types: *const i32,
    items: *const *mut c_void,
}

#[repr(C)]
struct ByteSpan {
    ptr: *const c_char,
    len: usize,
}

#[repr(C)]
struct RawScalar {
    dtype: i32,
    value: *const c_void,
}

#[repr(C)]
struct RawAttrs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    size: i64,
    types: *const i32,
    names: *const *const ByteSpan,
    attrs: *const *const c_void,
}

/// `XLA_FFI_CallFrame`: what XLA passes each handler.
#[repr(C)]
pub struct CallFrame {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    api: *const Api,
    ctx: *mut c_void,
    stage: i32,
    args: RawList,
    rets: RawList,
    attrs: RawAttrs,
    future: *mut c_void,
}

#[repr(C)]
struct Metadata {
    struct_size: usize,
    api_version: ApiVersion,
    traits: u32,
    state_type_id: i64,
}

#[repr(C)]
struct MetadataExtension {
    base: ExtensionBase,
    metadata: *mut Metadata,
}

/// A handler's signature (`XLA_FFI_Handler`).
pub type Handler = extern "C" fn(*mut CallFrame) -> *mut XlaError;

/// An element type of the header's `XLA_FFI_DataType` that Kestrel's targets read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// `PRED` (one byte, 0 or 1).
    Pred,
    /// `S8`.
    I8,
    /// `S32`.
    I32,
    /// `S64`.
    I64,
    /// `U8`.
    U8,
    /// `U32`.
    U32,
    /// `U64`.
    U64,
    /// `F32`.
    F32,
    /// `F64`.
    F64,
    /// Any other code.
    Other(i32),
}

impl Dtype {
    fn of(code: i32) -> Dtype {
        match code {
            1 => Dtype::Pred,
            2 => Dtype::I8,
            4 => Dtype::I32,
            5 => Dtype::I64,
            6 => Dtype::U8,
            8 => Dtype::U32,
            9 => Dtype::U64,
            11 => Dtype::F32,
            12 => Dtype::F64,
            c => Dtype::Other(c),
        }
    }

    /// numpy's name of the type.
    pub fn name(self) -> String {
        match self {
            Dtype::Pred => "bool".into(),
            Dtype::I8 => "int8".into(),
            Dtype::I32 => "int32".into(),
            Dtype::I64 => "int64".into(),
            Dtype::U8 => "uint8".into(),
            Dtype::U32 => "uint32".into(),
            Dtype::U64 => "uint64".into(),
            Dtype::F32 => "float32".into(),
            Dtype::F64 => "float64".into(),
            Dtype::Other(c) => format!("XLA dtype {c}"),
        }
    }
}

/// A Rust element type with its XLA dtype (PRED is read and written as `u8`).
pub trait Elem: Copy {
    /// The dtype whose buffers hold this type.
    const DTYPE: Dtype;
}

macro_rules! elem {
    ($($t:ty => $d:ident),*) => { $(impl Elem for $t { const DTYPE: Dtype = Dtype::$d; })* };
}
elem!(i8 => I8, i32 => I32, i64 => I64, u32 => U32, u64 => U64, f32 => F32, f64 => F64);

/// `u8` buffers: `U8` and `PRED` both.
impl Elem for u8 {
    const DTYPE: Dtype = Dtype::U8;
}

/// One operand or result buffer of a call.
pub struct Buffer<'a> {
    /// Its element type.
    pub dtype: Dtype,
    /// Its shape.
    pub dims: &'a [i64],
    data: *mut c_void,
    len: usize,
    /// `("operand" | "result", index)`, for messages (made into text only on an error).
    what: (&'static str, usize),
}

impl<'a> Buffer<'a> {
    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its name in messages (`operand 1`, `result 0`).
    pub fn what(&self) -> String {
        format!("{} {}", self.what.0, self.what.1)
    }

    const fn empty() -> Buffer<'a> {
        Buffer {
            dtype: Dtype::Other(0),
            dims: &[],
            data: std::ptr::null_mut(),
            len: 0,
            what: ("", 0),
        }
    }

    fn check<T: Elem>(&self) -> Result<(), String> {
        let ok = self.dtype == T::DTYPE || (T::DTYPE == Dtype::U8 && self.dtype == Dtype::Pred);
        if !ok {
            return Err(format!(
                "{}: dtype {}, expected {}",
                self.what(),
                self.dtype.name(),
                T::DTYPE.name()
            ));
        }
        if !(self.data as usize).is_multiple_of(std::mem::align_of::<T>()) {
            return Err(format!("{}: buffer not aligned for {}", self.what(), T::DTYPE.name()));
        }
        Ok(())
    }

    /// The elements as `T` (an error naming the buffer for another dtype).
    pub fn slice<T: Elem>(&self) -> Result<&'a [T], String> {
        self.check::<T>()?;
        if self.len == 0 {
            return Ok(&[]);
        }
        // SAFETY: XLA hands a live buffer of `len` elements of this dtype (checked above,
        // alignment too) for the call's duration; operands are not written during it.
        Ok(unsafe { std::slice::from_raw_parts(self.data as *const T, self.len) })
    }

    /// The elements as `T`, writable (a result buffer).
    pub fn slice_mut<T: Elem>(&mut self) -> Result<&mut [T], String> {
        self.check::<T>()?;
        if self.len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: as `slice`; each result is its own buffer (Kestrel's calls declare no
        // input/output aliases), borrowed mutably for the slice's life.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.data as *mut T, self.len) })
    }
}

/// The most operands, results and scalar attributes a Kestrel target takes (a call with more is
/// refused); held in fixed arrays so decoding a call allocates nothing.
const MAX_BUFFERS: usize = 8;
const MAX_ATTRS: usize = 4;

/// A call's scalar attributes (the keyword arguments of `ffi_call`).
pub struct Attrs<'a> {
    items: [(&'a str, Dtype, *const c_void); MAX_ATTRS],
    len: usize,
}

impl<'a> Attrs<'a> {
    /// The scalar integer attribute `name` (a keyword argument of `ffi_call`).
    pub fn attr_i64(&self, name: &str) -> Result<i64, String> {
        let (_, d, v) = self.items[..self.len]
            .iter()
            .find(|(n, _, _)| *n == name)
            .ok_or_else(|| format!("attribute {name:?} missing"))?;
        // SAFETY: XLA's scalar attribute points at one value of its dtype.
        let v = unsafe {
            match d {
                Dtype::I32 => *(*v as *const i32) as i64,
                Dtype::I64 => *(*v as *const i64),
                Dtype::U32 => *(*v as *const u32) as i64,
                Dtype::U64 => i64::try_from(*(*v as *const u64))
                    .map_err(|_| format!("attribute {name:?}: out of range"))?,
                other => {
                    return Err(format!("attribute {name:?}: dtype {}, an integer", other.name()));
                }
            }
        };
        Ok(v)
    }
}

/// The buffers of a list (operands or results), checked to be buffers, into `out`; their count.
///
/// # Safety
/// `list` is a call frame's args or rets, live for `'a`.
unsafe fn buffers<'a>(
    list: &'a RawList,
    what: &'static str,
    out: &mut [Buffer<'a>; MAX_BUFFERS],
) -> Result<usize, String> {
    let n = usize::try_from(list.size).map_err(|_| format!("{what}s: count {}", list.size))?;
    if n > MAX_BUFFERS {
        return Err(format!("{n} {what}s: at most {MAX_BUFFERS}"));
    }
    for (i, slot) in out.iter_mut().enumerate().take(n) {
        // SAFETY: the header's lists hold `size` types and pointers.
        let (ty, item) = unsafe { (*list.types.add(i), *list.items.add(i)) };
        if ty != BUFFER {
            return Err(format!("{what} {i}: not a buffer (type {ty})"));
        }
        // SAFETY: a buffer item is an `XLA_FFI_Buffer` with `rank` dims.
        let b = unsafe { &*(item as *const RawBuffer) };
        let rank = usize::try_from(b.rank).map_err(|_| format!("{what} {i}: rank {}", b.rank))?;
        let dims: &[i64] =
            if rank == 0 { &[] } else { unsafe { std::slice::from_raw_parts(b.dims, rank) } };
        let len = dims
            .iter()
            .try_fold(1usize, |a, &d| usize::try_from(d).ok().and_then(|d| a.checked_mul(d)))
            .ok_or_else(|| format!("{what} {i}: shape {dims:?}"))?;
        *slot = Buffer { dtype: Dtype::of(b.dtype), dims, data: b.data, len, what: (what, i) };
    }
    Ok(n)
}

/// The call frame's attributes.
///
/// # Safety
/// `f` is the call frame XLA passed, live for `'a`.
unsafe fn attrs<'a>(f: &'a CallFrame) -> Result<Attrs<'a>, String> {
    let n = usize::try_from(f.attrs.size).map_err(|_| "attributes: count".to_string())?;
    let mut out = Attrs { items: [("", Dtype::Other(0), std::ptr::null()); MAX_ATTRS], len: 0 };
    for i in 0..n {
        // SAFETY: `size` types, names and attribute pointers.
        let (ty, name, attr) =
            unsafe { (*f.attrs.types.add(i), &**f.attrs.names.add(i), *f.attrs.attrs.add(i)) };
        if ty != ATTR_SCALAR {
            continue;
        }
        if out.len == MAX_ATTRS {
            return Err(format!("more than {MAX_ATTRS} scalar attributes"));
        }
        // SAFETY: a byte span of `len` bytes; a scalar attribute is an `XLA_FFI_Scalar`.
        let bytes = unsafe { std::slice::from_raw_parts(name.ptr as *const u8, name.len) };
        let name = std::str::from_utf8(bytes).map_err(|_| "attribute name: not UTF-8")?;
        let s = unsafe { &*(attr as *const RawScalar) };
        out.items[out.len] = (name, Dtype::of(s.dtype), s.value);
        out.len += 1;
    }
    Ok(out)
}

/// An XLA error carrying `message` (null where the runtime gave no way to make one).
fn error(api: *const Api, message: &str) -> *mut XlaError {
    // SAFETY: `api` is the frame's, live for the call; XLA copies the message.
    unsafe {
        let Some(create) = api.as_ref().and_then(|a| a.error_create) else {
            return std::ptr::null_mut();
        };
        let msg = CString::new(message.replace('\0', " ")).unwrap_or_default();
        let mut args = ErrorCreateArgs {
            struct_size: std::mem::offset_of!(ErrorCreateArgs, errc) + std::mem::size_of::<i32>(),
            extension_start: std::ptr::null_mut(),
            message: msg.as_ptr(),
            errc: INVALID_ARGUMENT,
        };
        create(&mut args)
    }
}

/// Answers XLA's metadata query (the API version implemented; no traits, no state).
///
/// # Safety
/// `ext` is the frame's metadata extension.
unsafe fn metadata(ext: *mut MetadataExtension) -> Result<(), String> {
    // SAFETY: XLA's extension and its metadata struct, whose size it states.
    unsafe {
        let m = (*ext).metadata;
        if m.is_null() {
            return Err("metadata query without a metadata struct".into());
        }
        let size = (*m).struct_size;
        if size < std::mem::offset_of!(Metadata, traits) + std::mem::size_of::<u32>() {
            return Err(format!("metadata struct of {size} bytes"));
        }
        (*m).api_version = ApiVersion {
            struct_size: std::mem::offset_of!(ApiVersion, minor) + std::mem::size_of::<i32>(),
            extension_start: std::ptr::null_mut(),
            major: API_MAJOR,
            minor: API_MINOR,
        };
        (*m).traits = 0;
        if size >= std::mem::size_of::<Metadata>() {
            (*m).state_type_id = 0;
        }
    }
    Ok(())
}

/// A target's body: its operands, results and attributes; an error's message.
pub(crate) type Body = fn(&[Buffer<'_>], &mut [Buffer<'_>], &Attrs<'_>) -> Result<(), String>;

/// Runs `body` on the decoded frame: every Kestrel target's entry. Returns null (success) or
/// an XLA error with the message (a panic's too: none crosses into XLA).
// The pointer is the one XLA passes a handler (`XLA_FFI_Handler` is a safe signature to it);
// nothing else calls this.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub(crate) fn call(frame: *mut CallFrame, body: Body) -> *mut XlaError {
    if frame.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: XLA passes a live call frame.
    let f = unsafe { &*frame };
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        // SAFETY: the frame's extension chain and contents are as the header defines them.
        unsafe {
            let ext = f.extension_start;
            if !ext.is_null() && (*ext).kind == EXTENSION_METADATA {
                return metadata(ext as *mut MetadataExtension);
            }
            if f.stage != STAGE_EXECUTE {
                return Err(format!("called at stage {}, not execute", f.stage));
            }
            let mut args = [const { Buffer::empty() }; MAX_BUFFERS];
            let mut rets = [const { Buffer::empty() }; MAX_BUFFERS];
            let na = buffers(&f.args, "operand", &mut args)?;
            let nr = buffers(&f.rets, "result", &mut rets)?;
            body(&args[..na], &mut rets[..nr], &attrs(f)?)
        }
    }));
    match r {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(m)) => error(f.api, &format!("kestrel: {m}")),
        Err(p) => {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            error(f.api, &format!("kestrel: internal error (a panic): {why}"))
        }
    }
}

/// Call frames built in Rust, for the tests: what XLA would pass, with an error maker that
/// keeps the message.
#[cfg(test)]
pub(crate) mod fake {
    use super::*;
    use std::sync::Mutex;

    /// The messages of the errors made (one test's at a time: they run under [`LOCK`]).
    pub(crate) static MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());
    /// Serialises the tests that read [`MESSAGES`].
    pub(crate) static LOCK: Mutex<()> = Mutex::new(());

    thread_local! {
        /// Heap allocations the last [`run`] on this thread made inside the handler.
        pub(crate) static ALLOCATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    unsafe extern "C" fn create(args: *mut ErrorCreateArgs) -> *mut XlaError {
        let m = unsafe { std::ffi::CStr::from_ptr((*args).message) };
        let mut g = MESSAGES.lock().unwrap();
        g.push(m.to_string_lossy().into_owned());
        // Any non-null pointer: the tests only compare it with null.
        std::ptr::NonNull::<XlaError>::dangling().as_ptr()
    }

    fn code(d: Dtype) -> i32 {
        match d {
            Dtype::Pred => 1,
            Dtype::I8 => 2,
            Dtype::I32 => 4,
            Dtype::I64 => 5,
            Dtype::U8 => 6,
            Dtype::U32 => 8,
            Dtype::U64 => 9,
            Dtype::F32 => 11,
            Dtype::F64 => 12,
            Dtype::Other(c) => c,
        }
    }

    /// An owned array: its bytes (8-aligned), dtype and shape.
    pub(crate) struct Array {
        pub(crate) dtype: Dtype,
        pub(crate) dims: Vec<i64>,
        pub(crate) words: Vec<u64>,
    }

    impl Array {
        pub(crate) fn new<T: Elem>(dims: &[i64], values: &[T]) -> Array {
            let bytes = std::mem::size_of_val(values);
            let mut words = vec![0u64; bytes.div_ceil(8).max(1)];
            // SAFETY: copying plain values into a large enough, aligned buffer.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    values.as_ptr() as *const u8,
                    words.as_mut_ptr() as *mut u8,
                    bytes,
                );
            }
            Array { dtype: T::DTYPE, dims: dims.to_vec(), words }
        }

        pub(crate) fn zeros<T: Elem + Default>(dims: &[i64]) -> Array {
            let n: i64 = dims.iter().product();
            Array::new::<T>(dims, &vec![T::default(); n as usize])
        }

        pub(crate) fn pred(dims: &[i64]) -> Array {
            let mut a = Array::zeros::<u8>(dims);
            a.dtype = Dtype::Pred;
            a
        }

        pub(crate) fn values<T: Elem>(&self) -> Vec<T> {
            let n: i64 = self.dims.iter().product();
            // SAFETY: the buffer holds `n` values of `T` (made so by `new`).
            unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const T, n as usize) }
                .to_vec()
        }
    }

    /// Calls `handler` as XLA would, with `attrs` as i64 scalars; returns the error message.
    pub(crate) fn run(
        handler: Handler,
        args: &mut [Array],
        rets: &mut [Array],
        attrs: &[(&str, i64)],
    ) -> Option<String> {
        let api = Api {
            struct_size: std::mem::size_of::<Api>(),
            extension_start: std::ptr::null_mut(),
            api_version: ApiVersion {
                struct_size: 24,
                extension_start: std::ptr::null_mut(),
                major: 0,
                minor: 3,
            },
            internal_api: std::ptr::null(),
            error_create: Some(create),
        };
        let raw = |a: &mut Array| RawBuffer {
            struct_size: std::mem::size_of::<RawBuffer>(),
            extension_start: std::ptr::null_mut(),
            dtype: code(a.dtype),
            data: a.words.as_mut_ptr() as *mut c_void,
            rank: a.dims.len() as i64,
            dims: a.dims.as_ptr(),
        };
        let mut ab: Vec<RawBuffer> = args.iter_mut().map(raw).collect();
        let mut rb: Vec<RawBuffer> = rets.iter_mut().map(raw).collect();
        let at = vec![BUFFER; ab.len()];
        let rt = vec![BUFFER; rb.len()];
        let ap: Vec<*mut c_void> = ab.iter_mut().map(|b| b as *mut _ as *mut c_void).collect();
        let rp: Vec<*mut c_void> = rb.iter_mut().map(|b| b as *mut _ as *mut c_void).collect();
        let values: Vec<i64> = attrs.iter().map(|(_, v)| *v).collect();
        let spans: Vec<ByteSpan> =
            attrs.iter().map(|(n, _)| ByteSpan { ptr: n.as_ptr() as _, len: n.len() }).collect();
        let scalars: Vec<RawScalar> =
            values.iter().map(|v| RawScalar { dtype: 5, value: v as *const i64 as _ }).collect();
        let names: Vec<*const ByteSpan> = spans.iter().map(|s| s as *const _).collect();
        let ptrs: Vec<*const c_void> = scalars.iter().map(|s| s as *const _ as _).collect();
        let types = vec![ATTR_SCALAR; attrs.len()];
        let list = |n: usize, t: &Vec<i32>, p: &Vec<*mut c_void>| RawList {
            struct_size: std::mem::size_of::<RawList>(),
            extension_start: std::ptr::null_mut(),
            size: n as i64,
            types: t.as_ptr(),
            items: p.as_ptr(),
        };
        let mut frame = CallFrame {
            struct_size: std::mem::size_of::<CallFrame>(),
            extension_start: std::ptr::null_mut(),
            api: &api,
            ctx: std::ptr::null_mut(),
            stage: STAGE_EXECUTE,
            args: list(ab.len(), &at, &ap),
            rets: list(rb.len(), &rt, &rp),
            attrs: RawAttrs {
                struct_size: std::mem::size_of::<RawAttrs>(),
                extension_start: std::ptr::null_mut(),
                size: attrs.len() as i64,
                types: types.as_ptr(),
                names: names.as_ptr(),
                attrs: ptrs.as_ptr(),
            },
            future: std::ptr::null_mut(),
        };
        MESSAGES.lock().unwrap().clear();
        let mut e = std::ptr::null_mut();
        let n = kestrel_testkit::allocations_in(|| e = handler(&mut frame));
        ALLOCATIONS.with(|a| a.set(n));
        if e.is_null() { None } else { MESSAGES.lock().unwrap().pop() }
    }

    /// The metadata query XLA makes at registration: the version the handler wrote.
    pub(crate) fn query(handler: Handler) -> (i32, i32, u32) {
        let mut m = Metadata {
            struct_size: std::mem::size_of::<Metadata>(),
            api_version: ApiVersion {
                struct_size: 0,
                extension_start: std::ptr::null_mut(),
                major: -1,
                minor: -1,
            },
            traits: 7,
            state_type_id: 9,
        };
        let mut ext = MetadataExtension {
            base: ExtensionBase {
                struct_size: std::mem::size_of::<MetadataExtension>(),
                kind: EXTENSION_METADATA,
                next: std::ptr::null_mut(),
            },
            metadata: &mut m,
        };
        let empty = || RawList {
            struct_size: 0,
            extension_start: std::ptr::null_mut(),
            size: 0,
            types: std::ptr::null(),
            items: std::ptr::null(),
        };
        let mut frame = CallFrame {
            struct_size: std::mem::size_of::<CallFrame>(),
            extension_start: &mut ext.base,
            api: std::ptr::null(),
            ctx: std::ptr::null_mut(),
            stage: 0,
            args: empty(),
            rets: empty(),
            attrs: RawAttrs {
                struct_size: 0,
                extension_start: std::ptr::null_mut(),
                size: 0,
                types: std::ptr::null(),
                names: std::ptr::null(),
                attrs: std::ptr::null(),
            },
            future: std::ptr::null_mut(),
        };
        assert!(handler(&mut frame).is_null());
        (m.api_version.major, m.api_version.minor, m.traits)
    }
}
