defmodule McpFramer.BadInputTest do
  # Every kind of wrong argument to the public functions, one row each: each
  # raises the documented exception, and the framer it was given (holding
  # "par") still frames "tial\n" afterwards.
  use ExUnit.Case, async: true

  @cap_error ~r/:max_message_bytes to be a positive integer/
  @opts_error ~r/expects a keyword list of options/
  @not_a_framer ~r/expected a framer from McpFramer.new\/1/
  @altered ~r/expected a framer from McpFramer.new\/1, got a %McpFramer{} whose fields were altered/

  # {what, call on the live framer, exception, message}
  defp table do
    new_options =
      for {what, opts, message} <- [
            {"a map", %{max_message_bytes: 1}, @opts_error},
            {"an atom", :max_message_bytes, @opts_error},
            {"a list of integers", [1, 2], @opts_error},
            {"a string", "opts", @opts_error},
            {"string keys", [{"max_message_bytes", 1}], @opts_error},
            {"an unknown option", [max_bytes: 10],
             ~r/unknown McpFramer.new\/1 option\(s\) \[:max_bytes\]; the options are :max_message_bytes, /},
            {"an option given twice", [max_message_bytes: 5, max_message_bytes: 1024],
             ~r/option\(s\) \[:max_message_bytes\] given more than once/},
            {"decode: given twice", [decode: :json, decode: nil],
             ~r/option\(s\) \[:decode\] given more than once/},
            {"a zero cap", [max_message_bytes: 0], @cap_error},
            {"a negative cap", [max_message_bytes: -1], @cap_error},
            {"a float cap", [max_message_bytes: 1.5], @cap_error},
            {"an atom cap", [max_message_bytes: :big], @cap_error},
            {"a string cap", [max_message_bytes: "8"], @cap_error},
            {"a nil cap", [max_message_bytes: nil], @cap_error},
            {"a cap over 64 bits", [max_message_bytes: 2 ** 64], @cap_error}
          ] do
        {"new/1 with #{what}", fn _framer -> McpFramer.new(opts) end, ArgumentError, message}
      end

    chunks =
      for {what, chunk} <- [
            {"a charlist", ~c"tial\n"},
            {"a bitstring", <<1::3>>},
            {"an integer", 42},
            {"nil", nil},
            {"a tuple", {:chunk, "x"}}
          ] do
        {"feed/2 with #{what} chunk", &McpFramer.feed(&1, chunk), ArgumentError,
         ~r/expects a binary chunk/}
      end

    framers =
      for {what, bad, message} <- [
            {"nil", fn _ -> nil end, @not_a_framer},
            {"a reference", fn _ -> make_ref() end, @not_a_framer},
            {"a plain map", fn f -> Map.from_struct(f) end, @not_a_framer},
            {"the baseline framer", fn _ -> McpFramer.PureFramer.new() end, @not_a_framer},
            {"a forged resource", &%{&1 | resource: make_ref()}, @altered},
            {"a missing resource", &Map.delete(&1, :resource), @not_a_framer},
            {"a non-integer generation", &%{&1 | generation: "0"}, @altered},
            {"a negative generation", &%{&1 | generation: -1}, @altered},
            {"another framer's resource", &%{&1 | resource: McpFramer.new().resource}, @altered},
            {"a superseded framer", &%{&1 | generation: &1.generation - 1}, ~r/stale McpFramer/},
            {"a generation ahead of the framer's", &%{&1 | generation: &1.generation + 1},
             @altered}
          ],
          {function, call} <- [
            {"feed/2", &McpFramer.feed(&1, "x\n")},
            {"buffered_bytes/1", &McpFramer.buffered_bytes/1}
          ] do
        {"#{function} with #{what}", &call.(bad.(&1)), ArgumentError, message}
      end

    streams =
      for {what, call, exception, message} <- [
            {"options that are not a keyword list", &McpFramer.stream/2, ArgumentError,
             @opts_error},
            {"an unknown :on_oversize", fn c, _ -> McpFramer.stream(c, on_oversize: :ignore) end,
             ArgumentError, ~r/:on_oversize to be :skip or :raise/},
            {"a bad cap", fn c, _ -> McpFramer.stream(c, max_message_bytes: 0) end, ArgumentError,
             @cap_error},
            {"an unknown option", fn c, _ -> McpFramer.stream(c, max_bytes: 1) end, ArgumentError,
             ~r/unknown McpFramer.stream\/2 option\(s\) \[:max_bytes\]; the options are :on_oversize, /},
            {":on_oversize given twice",
             fn c, _ -> McpFramer.stream(c, on_oversize: :skip, on_oversize: :raise) end,
             ArgumentError, ~r/option\(s\) \[:on_oversize\] given more than once/},
            {"chunks that are not enumerable", fn _, _ -> McpFramer.stream(42) end, ArgumentError,
             ~r/expects an enumerable of binary chunks/},
            {"a function of one argument for chunks", fn _, _ -> McpFramer.stream(& &1) end,
             ArgumentError, ~r/expects an enumerable of binary chunks/},
            {"an improper list of chunks", fn _, _ -> McpFramer.stream(["a\n" | "b\n"]) end,
             ArgumentError, ~r/expects an enumerable of binary chunks/},
            {"a chunk that is not a binary, when run",
             fn _, _ -> McpFramer.stream(["a\n", :b]) |> Enum.to_list() end, ArgumentError,
             ~r/^McpFramer.stream\/2 expects binary chunks, got: :b$/}
          ] do
        {"stream/2 with #{what}", fn _framer -> call.(["x\n"], :raise) end, exception, message}
      end

    new_options ++ chunks ++ framers ++ streams
  end

  test "every bad argument raises its documented exception and loses nothing" do
    for {what, call, exception, message} <- table() do
      {:ok, [], framer} = McpFramer.feed(McpFramer.new(), "par")

      error = assert_raise exception, fn -> call.(framer) end
      assert Exception.message(error) =~ message, "#{what}: #{Exception.message(error)}"

      assert {:ok, ["partial"], _} = McpFramer.feed(framer, "tial\n"),
             "#{what}: the framer no longer works"
    end
  end

  test "each message names the function or option and shows the bad value" do
    for {call, message} <- [
          {fn -> McpFramer.new(decode: :xml) end,
           "expected :decode to be :json or nil, got: :xml"},
          {fn -> McpFramer.new(max_depth: 3) end,
           "the :max_depth option (got: 3) applies only with decode: :json"},
          {fn -> McpFramer.stream([], on_oversize: :ignore) end,
           "McpFramer.stream/2 expects :on_oversize to be :skip or :raise, got: :ignore"},
          {fn -> McpFramer.stream(42) end,
           "McpFramer.stream/2 expects an enumerable of binary chunks, got: 42"},
          # Raw, not through McpFramer's Inspect, which would hide what is wrong.
          {fn -> McpFramer.feed(Map.delete(McpFramer.new(), :resource), "x\n") end,
           "expected a framer from McpFramer.new/1, got: %{__struct__: McpFramer, generation: 0}"}
        ] do
      assert Exception.message(assert_raise(ArgumentError, call)) == message
    end
  end

  test "a broken invariant of the NIF's own is McpFramer.InternalError, told apart from a bad argument" do
    # The NIF raises it for a poisoned lock or for held bytes or a decoder
    # out of step (native/mcp_framer_nif/src/error.rs), none of which an
    # argument can cause.
    error = McpFramer.InternalError.exception(message: "the held bytes are out of step")
    refute is_exception(error, ArgumentError)
    assert Exception.message(error) =~ "the held bytes are out of step"
    assert Exception.message(error) =~ "bug in mcp_framer; please report it"
  end
end
