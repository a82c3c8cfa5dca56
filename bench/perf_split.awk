# Sorts `perf report --no-children --sort dso,sym` lines into what the
# time was spent on, and prints a table of shares. Run by make profile.
# By symbol name, so code inlined into another function (the release
# build uses LTO) counts where it was inlined; perf rounds each symbol's
# share, so a column can add up to a little over 100%.
function part(dso, sym) {
  # Erlang functions first: their names ("Enum.map") would match below.
  if (dso ~ /JIT/) return "Erlang and Elixir code (feed/2, the bench loop)"
  if (sym ~ /TermBuilder|mcp_framer_nif::decode/) return "our term builder (NIF side of making terms)"
  # The string loops of mcp_framer_core::arch are parsing; its newline
  # masks are inlined into the framer.
  if (sym ~ /mcp_framer_core::json|mcp_framer_core::arch|simdutf8|from_utf8/) return "parsing: strings, numbers, structure, UTF-8"
  if (sym ~ /mcp_framer_nif::frame|memchr|newlines/) return "framing: newline search, held partials"
  if (dso ~ /jiffy/) return "jiffy: its whole NIF, parsing and making terms"
  if (dso ~ /mcp_framer_nif/ || sym ~ /rustler|clock_gettime|__tls_get_addr|call_nif|pthread_getspecific/) return "NIF call: entry, arguments, lock, clock, results"
  if (sym ~ /map|cmp_compound|cmp_term|hash|flatmap/) return "BEAM: making maps (incl. sorting their keys)"
  if (sym ~ /binary|bin_|erts_alcu|alloc|_int_free|malloc|free/) return "BEAM and libc: making and freeing binaries"
  if (sym ~ /garbage|gc|sweep|copy_struct|size_object|offheap/) return "BEAM: garbage collection"
  if (sym ~ /memmove|memcpy|memcmp/) return "memcpy and memcmp (both sides' copies, BEAM key compares)"
  if (dso ~ /kernel/) return "kernel (page faults, scheduling)"
  if (dso ~ /beam/) return "BEAM: other (symbols not resolved: lists, tuples, GC, scheduling)"
  return "other"
}
/^ +[0-9.]+%/ {
  share = $1; sub(/%/, "", share)
  dso = $2
  sym = ""
  for (i = 4; i <= NF; i++) sym = sym " " $i
  total[part(dso, sym)] += share
}
END {
  print "| spent on | share of samples |"
  print "|---|---:|"
  n = 0
  for (k in total) keys[++n] = k
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
    if (total[keys[j]] > total[keys[i]]) { t = keys[i]; keys[i] = keys[j]; keys[j] = t }
  for (i = 1; i <= n; i++) printf "| %s | %.1f%% |\n", keys[i], total[keys[i]]
}
