/* The C ABI from an installed sparsetile, through sparsetile::sparsetile
 * alone (its include directories bring sparsetile.h): compiles a kernel to
 * PTX, which needs no GPU, and prints "consumer_c: ok". */
#include "sparsetile/sparsetile.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  const char *src = "kernel k(x: *f32) { store(x + arange(0, 32), 1.0); }";
  st_options options;
  char *ptx = NULL;
  memset(&options, 0, sizeof(options));
  options.arch = "sm_90";
  if (st_compile_stage(src, "k.tile", "k", NULL, NULL, 0, &options, NULL, 0,
                       "ptx", &ptx) != ST_OK) {
    fprintf(stderr, "consumer_c: %s\n", st_last_error());
    return 1;
  }
  if (!strstr(ptx, ".entry k")) {
    fprintf(stderr, "consumer_c: no entry in the PTX\n");
    return 1;
  }
  st_free(ptx);
  printf("consumer_c: ok (sparsetile %s)\n", st_version());
  return 0;
}
