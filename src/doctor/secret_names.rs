//! Which option and setting names hold a secret, as `collect` judges them wherever it redacts
//! (mount options, the nfs-gds policy, the kernel command line), and what a secret value
//! becomes.

/// What a secret value becomes.
pub const REDACTED: &str = "REDACTED";

/// An option's name as judged: without the quotes or blanks around it (a whole option may be
/// quoted: `"password=…"`), in lower case.
fn key_name(key: &str) -> String {
    key.trim_matches(|c: char| c == '"' || c == '\'' || c.is_whitespace())
        .to_ascii_lowercase()
}

/// The names that hold a password (MooseFS's `mfspassword` and `mfsmd5pass` too).
pub fn is_password_key(key: &str) -> bool {
    let k = key_name(key);
    k.starts_with("pass")
        || k.ends_with("pass")
        || k.contains("password")
        || k.contains("passwd")
        || k == "pw"
        || k == "pwd"
}

/// The names that hold a user, which some file systems let carry the password too: cifs's
/// `user=bob%PASS` and `username=DOM/bob%PASS`, curlftpfs's `user=bob:PASS` and
/// `proxy_user=bob:PASS`.
pub fn is_user_key(key: &str) -> bool {
    let k = key_name(key);
    k.ends_with("user") || k.ends_with("username")
}

/// Whether an option or setting of this name holds something secret.
pub fn is_secret_key(key: &str) -> bool {
    let k = key_name(key);
    is_password_key(&k)
        || k.starts_with("secret")
        || k.contains("key")
        || k.contains("token")
        || k.starts_with("cred")
        || k.contains("command")
        || k.ends_with("_cmd")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_judged_without_quotes_or_case() {
        for secret in [
            "password",
            "\"PASS\"",
            "mfsmd5pass",
            "pw",
            "sec_key",
            "ssh_command",
            "x_cmd",
            "credentials",
            "Token",
        ] {
            assert!(is_secret_key(secret), "{secret}");
        }
        for plain in ["vers", "user", "proto", "port", "sec"] {
            assert!(!is_secret_key(plain), "{plain}");
        }
        assert!(is_user_key("proxy_user") && is_user_key("username"));
        assert!(is_password_key(" passwd") && !is_password_key("user"));
    }
}
