"""The torch stable-ABI audit: wheels and libraries in, verdicts per allowlist pattern out."""
