defmodule McpFramer.InstructionSetTest do
  # The loaded NIF tells which instruction set its string code runs, so
  # that `make test`'s pass under MCP_FRAMER_ISA=avx2 and `make bench` can
  # show that they ran the one they name.
  use ExUnit.Case, async: true

  test "the NIF runs the instruction set MCP_FRAMER_ISA names if the CPU has it, else the widest" do
    {running, available} = McpFramer.Native.instruction_set()
    assert "portable" in available
    assert running in available

    case System.get_env("MCP_FRAMER_ISA") do
      named when is_binary(named) and named != "" ->
        if named in available,
          do: assert(running == named),
          else: assert(running == List.last(available))

      _ ->
        assert running == List.last(available)
    end
  end
end
