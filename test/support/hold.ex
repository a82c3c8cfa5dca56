defmodule McpFramer.Hold do
  @moduledoc false
  # A NIF that holds its normal scheduler on purpose, for the test of the
  # scheduler tests' watch (test/support/hold_nif). load!/0 builds it with
  # cargo, as the project's own NIF is built, and loads it.

  @crate "mcp_framer_hold"
  @root Path.expand("../..", __DIR__)

  @spec load!() :: :ok
  def load! do
    # A workspace of its own, built into the project's target directory.
    args = ["build", "--release", "--locked", "--quiet", "--target-dir", "#{@root}/target"]

    case System.cmd("cargo", args, cd: "#{@root}/test/support/hold_nif", stderr_to_stdout: true) do
      {_, 0} -> :ok
      {output, status} -> raise "cargo exited with status #{status}:\n#{output}"
    end

    case :erlang.load_nif(~c"#{@root}/target/release/lib#{@crate}", 0) do
      :ok -> :ok
      {:error, {:reload, _}} -> :ok
      {:error, reason} -> raise "#{@crate} did not load: #{inspect(reason)}"
    end
  end

  @doc "Holds the calling scheduler for `ms` ms of its thread's CPU time."
  @spec hold(non_neg_integer()) :: non_neg_integer()
  def hold(_ms), do: :erlang.nif_error(:not_loaded)
end
