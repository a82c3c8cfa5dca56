defmodule McpFramer.Seed do
  @moduledoc false
  # Randomised tests draw case n of run r from the seed {seed, n, r}, where
  # seed comes from the environment variable the test names, so that a
  # failure can say how to reproduce itself.

  # The seed in `variable`, or a new one.
  @spec seed(String.t()) :: pos_integer()
  def seed(variable) do
    case System.get_env(variable) do
      nil -> :rand.uniform(1_000_000_000)
      seed -> String.to_integer(seed)
    end
  end

  # Runs `check` on cases 1 to `count` of `run`, each seeded by case!/4
  # from the seed in `variable`. A failure is prefixed with the seed and
  # case that reproduce it. `check` gets n.
  @spec run_cases(String.t(), pos_integer(), pos_integer(), (pos_integer() -> term())) :: :ok
  def run_cases(variable, count, run, check) do
    seed = seed(variable)

    for n <- 1..count do
      where = case!(variable, seed, n, run)

      try do
        check.(n)
      rescue
        error in ExUnit.AssertionError ->
          reraise %{error | message: "#{where}: #{error.message}"}, __STACKTRACE__

        error ->
          reraise "#{where}: #{Exception.message(error)}", __STACKTRACE__
      end
    end

    :ok
  end

  # Seeds this process for case `n` of `run`, and says how to get it again.
  @spec case!(String.t(), pos_integer(), pos_integer(), pos_integer()) :: String.t()
  def case!(variable, seed, n, run) do
    :rand.seed(:exsss, {seed, n, run})
    "#{variable}=#{seed} (case #{n} of run #{run})"
  end
end
