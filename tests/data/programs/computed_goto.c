/* Computed goto (GNU labels as values): indirectbr and blockaddress constants. */
int interpret(const unsigned char *code) {
  static void *dispatch[] = { &&op_inc, &&op_dec, &&op_halt };
  int acc = 0;
  goto *dispatch[*code];
op_inc: acc++; code++; goto *dispatch[*code];
op_dec: acc--; code++; goto *dispatch[*code];
op_halt: return acc;
}
