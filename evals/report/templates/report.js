// Filters: hide the columns and transcripts of unticked runs, and every row but the chosen task.
(function () {
  var form = document.getElementById("filters");
  if (!form) {
    return;
  }
  function apply() {
    var shown = {};
    form.querySelectorAll(".run-filter").forEach(function (box) {
      shown[box.value] = box.checked;
    });
    var task = document.getElementById("task-filter").value;
    document.querySelectorAll("[data-run]").forEach(function (el) {
      var hideTask = task !== "" && el.dataset.task !== undefined && el.dataset.task !== task;
      el.classList.toggle("hidden", !shown[el.dataset.run] || hideTask);
    });
    document.querySelectorAll("tr[data-task]").forEach(function (row) {
      row.classList.toggle("hidden", task !== "" && row.dataset.task !== task);
    });
  }
  form.addEventListener("change", apply);
  apply();
})();

// The leaderboard sorts by a clicked column head: accuracy highest first, times lowest first.
(function () {
  var board = document.getElementById("leaderboard");
  if (!board) {
    return;
  }
  var body = board.querySelector("tbody");
  function value(row, key) {
    var text = row.dataset[key];
    return text === "" ? Infinity : parseFloat(text);
  }
  board.querySelectorAll("th.sortable").forEach(function (head) {
    head.addEventListener("click", function () {
      var key = head.dataset.sort;
      var down = head.dataset.order === "desc";
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var diff = down ? value(b, key) - value(a, key) : value(a, key) - value(b, key);
        if (diff === 0 && key === "accuracy") {
          diff = value(b, "low") - value(a, "low");
        }
        return diff || Number(a.dataset.run) - Number(b.dataset.run);
      });
      rows.forEach(function (row, i) {
        row.querySelector(".rank").textContent = String(i + 1);
        body.appendChild(row);
      });
      board.querySelectorAll("th.sortable").forEach(function (other) {
        other.removeAttribute("aria-sort");
      });
      head.setAttribute("aria-sort", down ? "descending" : "ascending");
    });
  });
})();
