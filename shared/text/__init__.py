"""Pure text rules both services apply: sender and domain normalisation, RFC 2047 words, storable text, CSV cells
and unsubscribe links. No I/O."""
