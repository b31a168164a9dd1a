//! The state directory's lock: one kemu per directory.
//!
//! Two processes appending to one log would each replay only their own writes
//! at the next start, so the second loses the first one's acknowledged writes.
//! An OS file lock (`flock`), held for the life of the process, keeps a second
//! kemu out; it is taken before anything else is written to the directory and
//! the kernel drops it when the holder dies, `kill -9` included.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

use super::{PersistenceError, io};

/// The lock file of a state directory; it holds the holder's PID.
pub const LOCK: &str = "kemu.lock";

/// The held lock of a state directory; dropping it releases the lock.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

/// Takes the lock of `dir` (which must exist) and writes this process's PID
/// into it, or says which process holds it.
pub fn acquire(dir: &Path) -> Result<DirLock, PersistenceError> {
    let path = dir.join(LOCK);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io(&path))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            // The holder may be between truncating and writing its PID.
            let _ = file.read_to_string(&mut holder);
            return Err(PersistenceError::Locked {
                dir: dir.to_owned(),
                holder: holder.trim().parse().ok(),
            });
        }
        Err(TryLockError::Error(e)) => return Err(io(&path)(e)),
    }
    file.set_len(0).map_err(io(&path))?;
    file.rewind().map_err(io(&path))?;
    writeln!(file, "{}", std::process::id()).map_err(io(&path))?;
    Ok(DirLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let held = acquire(dir.path()).unwrap();
        let pid = std::process::id();
        let contents = std::fs::read_to_string(dir.path().join(LOCK)).unwrap();
        assert_eq!(contents.trim(), pid.to_string());
        // flock locks are per open file: a second open in this process conflicts too.
        match acquire(dir.path()) {
            Err(PersistenceError::Locked { holder, .. }) => assert_eq!(holder, Some(pid)),
            other => panic!("not refused: {other:?}"),
        }
        drop(held);
        acquire(dir.path()).unwrap();
    }
}
