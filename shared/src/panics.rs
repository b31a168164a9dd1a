//! Panics caught at a boundary (a request, a reconcile): a bug in one
//! request or one object must not take its worker, its controller or the
//! process down with it.

use std::any::Any;

/// What a caught panic said, for the log.
pub fn message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn messages_of_both_payload_kinds() {
        let text = std::panic::catch_unwind(|| panic!("static")).unwrap_err();
        assert_eq!(super::message(text.as_ref()), "static");
        let n = 7;
        let formatted = std::panic::catch_unwind(|| panic!("formatted {n}")).unwrap_err();
        assert_eq!(super::message(formatted.as_ref()), "formatted 7");
    }
}
