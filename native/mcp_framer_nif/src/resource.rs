//! The resource type that holds a framer's state, opened by hand: Rustler's
//! `ResourceArc` looks its type up in a hash map on every decode, and that
//! cost 11 of the 81 ns a NIF call on a short chunk took.

use crate::FramerResource;
use rustler::sys::{
    c_void, enif_alloc_resource, enif_get_resource, enif_make_resource, enif_open_resource_type,
    enif_release_resource, ErlNifEnv, ErlNifResourceFlags, ErlNifResourceType,
};
use rustler::{Env, Term};
use std::mem::{align_of, size_of};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Set by `open` in the module's load callback, before any NIF can run.
static TYPE: AtomicPtr<ErlNifResourceType> = AtomicPtr::new(ptr::null_mut());

/// Every scheduler thread may use a framer's state.
const _: fn() = || {
    fn shared_between_threads<T: Send + Sync>() {}
    shared_between_threads::<FramerResource>();
};

/// Opens the type; the module fails to load if this returns false.
pub fn open(env: Env) -> bool {
    // SAFETY: `env` is the load callback's, where types are opened, and
    // the name is NUL-terminated.
    let opened = unsafe {
        enif_open_resource_type(
            env.as_c_arg(),
            ptr::null(),
            c"McpFramerState".as_ptr(),
            Some(destruct),
            ErlNifResourceFlags::ERL_NIF_RT_CREATE,
            ptr::null_mut(),
        )
    };
    TYPE.store(opened.cast_mut(), Ordering::Release);
    !opened.is_null()
}

/// A new resource term holding `state`, or `None` without memory.
pub fn make(env: Env<'_>, state: FramerResource) -> Option<Term<'_>> {
    let size = size_of::<FramerResource>() + align_of::<FramerResource>();
    // SAFETY: the object has room to align the state in it, which is
    // written before any term refers to the object. Releasing our own
    // reference leaves the term's as the only one.
    unsafe {
        let object = enif_alloc_resource(TYPE.load(Ordering::Acquire), size);
        if object.is_null() {
            return None;
        }
        ptr::write(aligned(object), state);
        let term = enif_make_resource(env.as_c_arg(), object);
        enif_release_resource(object);
        Some(Term::new(env, term))
    }
}

/// The state in `term`, if it is a resource of this type.
pub fn get(term: Term<'_>) -> Option<&FramerResource> {
    let mut object = ptr::null();
    // SAFETY: ERTS checks the term's type; an object of it holds a state
    // written by `make`, alive for as long as the term is.
    unsafe {
        let found = enif_get_resource(
            term.get_env().as_c_arg(),
            term.as_c_arg(),
            TYPE.load(Ordering::Acquire),
            &mut object,
        );
        (found != 0).then(|| &*aligned(object.cast_mut()))
    }
}

/// Drops the state when ERTS frees its object.
unsafe extern "C" fn destruct(_env: *mut ErlNifEnv, object: *mut c_void) {
    // SAFETY: ERTS calls this once, after the last reference is gone, for
    // an object that `make` filled.
    let _ = std::panic::catch_unwind(|| unsafe { ptr::drop_in_place(aligned(object)) });
}

/// Where the state lies in an object of `make`'s size.
fn aligned(object: *mut c_void) -> *mut FramerResource {
    let align = align_of::<FramerResource>();
    let offset = (align - object as usize % align) % align;
    object.cast::<u8>().wrapping_add(offset).cast()
}
