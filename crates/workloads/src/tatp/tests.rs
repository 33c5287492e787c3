//! Tests of TATP's subscriber-id distribution, `sub_nbr` and configuration.

use super::*;

#[test]
fn a_depends_on_the_population() {
    assert_eq!(nurand_a(1), 65_535);
    assert_eq!(nurand_a(1_000_000), 65_535);
    assert_eq!(nurand_a(1_000_001), 1_048_575);
    assert_eq!(nurand_a(10_000_000), 1_048_575);
    assert_eq!(nurand_a(10_000_001), 2_097_151);
}

#[test]
fn sub_nbr_is_fifteen_digits() {
    assert_eq!(&sub_nbr(1), b"000000000000001");
    assert_eq!(&sub_nbr(987_654_321), b"000000987654321");
}

#[test]
fn config_is_validated() {
    assert!(TatpConfig::default().validate().is_ok());
    let c = |subscribers| TatpConfig { subscribers, mix: default_mix() };
    assert!(c(0).validate().unwrap_err().contains("at least 1"));
    assert!(c(MAX_SUBSCRIBERS + 1).validate().unwrap_err().contains("too large"));
    assert!(c(1).validate().is_ok());
}
